// Package kube is the Kubernetes backend of the identity, deploy and restore step
// types and of the block gates (k8s.io/client-go): it connects to the cluster a host
// block names (kubeconfig path and context, else KUBECONFIG or ~/.kube/config, else
// the in-cluster service account) in one namespace, and works on one workload per
// target: a Deployment or a StatefulSet (Workload, named by a Ref).
//
// A workload's identity is the identity record the Docker runtime keeps
// (docker.Identity), filled from its pods' statuses so that gates compare the same
// fields whichever runtime serves a target: container IDs, the image ID the container
// runtime reports (imageID; the image's config digest, "sha256:…", which is the
// Docker image ID of an image loaded from Docker), restart counts and node names. The
// incarnation is the sorted set of (pod UID, restart count): a pod that restarts, is
// killed and replaced, or is rescheduled makes a new one. Pods (Pod) are kept beside
// it as evidence. PodEvents reads what the cluster reported about an incarnation's
// pods (Killing, Evicted, Preempted, BackOff), which explains a pod that is gone.
//
// Deploy takes out of service every other workload of the namespace that serves the
// target's port (a container port or host port equal to the endpoint's), after
// saving its full object and its pods' image IDs (Saved, written before anything is
// touched); restore puts the saved object back with each container's image pinned to
// the exact image ID its pods ran, and verifies it.
//
// Invariants: every API call is bounded by the caller's context and the client's
// timeout; connecting asks the server's version first, so an unreachable API server
// is an error naming its URL, never a hang. Error messages name the object
// (kind namespace/name, the server URL, the context). A rollout counts only pods of
// the workload's latest template revision; a StatefulSet's pod of an older revision
// that is not ready is deleted, because its controller never replaces it.
//
// Out of scope: reaching a target by its pod address (the endpoint is a
// fixed address: a hostNetwork port, a NodePort or a Service address the client
// reaches), registries and pulls (images are loaded onto the node; pods use
// imagePullPolicy Never or IfNotPresent).
package kube
