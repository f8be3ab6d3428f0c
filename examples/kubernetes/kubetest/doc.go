// Package kubetest gives tests the real single-node cluster that .ci/kube/cluster.sh
// starts: its kubeconfig (RIGOR_KUBECONFIG), a fresh namespace per test, images
// imported into its containerd (RIGOR_KUBE_CONTAINERD) and Deployments applied from
// YAML. Without RIGOR_KUBECONFIG a test that needs the cluster skips and says how to
// start one; with RIGOR_REQUIRE_KUBE=1 (set by .ci/run where the cluster starts) it
// fails instead.
//
// Out of scope: starting the cluster (cluster.sh does, once per CI run: it takes
// minutes, and each test would pay them).
package kubetest
