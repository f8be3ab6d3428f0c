#!/usr/bin/env bash
# A real single-node Kubernetes cluster for rigor's tests, on private ports and
# directories of its own:
#
#   .ci/kube/cluster.sh up      build (once, cached by version; build.sh) and start etcd, the
#                               API server, controller manager, scheduler, a containerd of its
#                               own and the kubelet; wait for the node to be Ready; print
#                               shell lines that export RIGOR_KUBECONFIG and
#                               RIGOR_KUBE_CONTAINERD (the containerd socket images are
#                               imported into) on stdout.
#   .ci/kube/cluster.sh load IMAGE...   docker save IMAGE and import it into that containerd
#                               (pods use imagePullPolicy: Never: nothing can be pulled here).
#   .ci/kube/cluster.sh down    stop everything and remove the bridge; keeps the logs.
#
# Everything lives under RIGOR_KUBE_DIR (default /tmp/rigor-kube-$UID); ports are
# RIGOR_KUBE_PORT_BASE+1..+7 (default 19200). Needs root, Docker (to build the FROM
# scratch pause image), Debian's etcd-server, containerd, runc and
# containernetworking-plugins. The facts behind every setting are in
# shared/reference/kubernetes-local-cluster.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
D=${RIGOR_KUBE_DIR:-/tmp/rigor-kube-$(id -u)}
base=${RIGOR_KUBE_PORT_BASE:-19200}
p_etcd=$((base + 1)) p_peer=$((base + 2)) p_api=$((base + 3)) p_kcm=$((base + 4))
p_sched=$((base + 5)) p_kubelet=$((base + 6)) p_kubelet_health=$((base + 7))
sock=$D/containerd.sock
bridge=rigorkube0
node=rigor-node
token_file=$D/token

log() { echo "cluster.sh: $*" >&2; }
die() { log "$*"; exit 1; }

start() { # name cmd...
  local name=$1
  shift
  mkdir -p "$D/logs"
  "$@" >"$D/logs/$name.log" 2>&1 &
  echo $! >"$D/pids/$name"
}

alive() { [[ -f $D/pids/$1 ]] && kill -0 "$(cat "$D/pids/$1")" 2>/dev/null; }

wait_for() { # what seconds cmd...
  local what=$1 secs=$2
  shift 2
  local end=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS > end)); then
      die "$what not ready within ${secs}s; last lines of its log:$(for f in "$D"/logs/*.log; do echo; echo "== $f"; tail -n 5 "$f"; done)"
    fi
    sleep 1
  done
}

api() { curl -fsS --cacert "$D/pki/ca.crt" -H "Authorization: Bearer $(cat "$token_file")" "https://127.0.0.1:$p_api$1"; }

node_ready() { api "/api/v1/nodes/$node" | tr -d ' \n' | grep -q '"type":"Ready","status":"True"'; }

exports() {
  echo "export RIGOR_KUBECONFIG=$D/kubeconfig"
  echo "export RIGOR_KUBE_CONTAINERD=$sock"
}

pki() {
  mkdir -p "$D/pki"
  cd "$D/pki"
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=rigor-kube-ca -keyout ca.key -out ca.crt 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj /CN=kube-apiserver -keyout apiserver.key -out apiserver.csr 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\n' >san.ext
  openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 -extfile san.ext -out apiserver.crt 2>/dev/null
  openssl genrsa -out sa.key 2048 2>/dev/null
  openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  cd - >/dev/null
}

kubeconfig() {
  cat >"$D/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: rigor-kube
  cluster:
    server: https://127.0.0.1:$p_api
    certificate-authority: $D/pki/ca.crt
users:
- name: admin
  user:
    token: $(cat "$token_file")
contexts:
- name: rigor-kube
  context: {cluster: rigor-kube, user: admin, namespace: default}
current-context: rigor-kube
EOF
}

# The sandbox image: nothing can be pulled, so a static Go program that waits for
# SIGTERM, in an image FROM scratch, stands in for registry.k8s.io/pause.
pause_image() {
  local w=$D/pause
  mkdir -p "$w"
  cat >"$w/main.go" <<'EOF'
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
EOF
  printf 'module pause\n\ngo 1.22\n' >"$w/go.mod"
  printf 'FROM scratch\nCOPY pause /pause\nENTRYPOINT ["/pause"]\n' >"$w/Dockerfile"
  (cd "$w" && CGO_ENABLED=0 go build -o pause . && docker build -q -t registry.k8s.io/pause:3.10 . >/dev/null)
}

load() {
  local img tar
  for img in "$@"; do
    tar=$(mktemp "$D/image-XXXX.tar")
    docker save -o "$tar" "$img"
    ctr -a "$sock" -n k8s.io images import --snapshotter native "$tar" >/dev/null
    rm -f "$tar"
  done
}

up() {
  if [[ -f $D/kubeconfig ]] && alive kubelet && node_ready; then
    log "already up in $D"
    exports
    return
  fi
  [[ $(id -u) == 0 ]] || die "needs root (the kubelet and containerd manage cgroups, mounts and network namespaces)"
  for c in etcd containerd runc docker curl openssl; do
    command -v "$c" >/dev/null || die "$c not found (apt-get install -y etcd-server containerd runc containernetworking-plugins curl openssl; Docker builds the pause image)"
  done
  [[ -x /usr/lib/cni/bridge ]] || die "/usr/lib/cni/bridge not found (apt-get install -y containernetworking-plugins)"
  local bin
  bin=$("$here/build.sh")
  down_quiet
  rm -rf "$D"
  mkdir -p "$D/pids" "$D/logs" "$D/cni" "$D/etcd"
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$token_file"
  echo "$(cat "$token_file"),admin,admin,system:masters" >"$D/tokens.csv"
  pki
  kubeconfig

  start etcd etcd --name rigor --data-dir "$D/etcd" \
    --listen-client-urls "http://127.0.0.1:$p_etcd" --advertise-client-urls "http://127.0.0.1:$p_etcd" \
    --listen-peer-urls "http://127.0.0.1:$p_peer" --initial-advertise-peer-urls "http://127.0.0.1:$p_peer" \
    --initial-cluster "rigor=http://127.0.0.1:$p_peer"
  wait_for etcd 60 curl -fsS "http://127.0.0.1:$p_etcd/health"

  start kube-apiserver "$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$p_etcd" \
    --secure-port "$p_api" --bind-address 127.0.0.1 --advertise-address 127.0.0.1 \
    --tls-cert-file "$D/pki/apiserver.crt" --tls-private-key-file "$D/pki/apiserver.key" \
    --client-ca-file "$D/pki/ca.crt" \
    --service-account-key-file "$D/pki/sa.pub" --service-account-signing-key-file "$D/pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc \
    --token-auth-file "$D/tokens.csv" --authorization-mode RBAC \
    --service-cluster-ip-range 10.96.0.0/24 --allow-privileged=true
  wait_for kube-apiserver 300 api /readyz

  start kube-controller-manager "$bin/kube-controller-manager" --kubeconfig "$D/kubeconfig" \
    --service-account-private-key-file "$D/pki/sa.key" --root-ca-file "$D/pki/ca.crt" \
    --leader-elect=false --controllers '*,-nodeipam,-service-lb-controller,-cloud-node-lifecycle' \
    --secure-port "$p_kcm" --bind-address 127.0.0.1
  start kube-scheduler "$bin/kube-scheduler" --kubeconfig "$D/kubeconfig" --leader-elect=false \
    --secure-port "$p_sched" --bind-address 127.0.0.1

  cat >"$D/cni/10-rigor.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "rigor-kube", "plugins": [
  {"type": "bridge", "bridge": "$bridge", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.77.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}],
            "dataDir": "$D/cni/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
EOF
  cat >"$D/containerd.toml" <<EOF
version = 2
root = "$D/containerd/root"
state = "$D/containerd/state"
[grpc]
  address = "$sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$D/cni"
EOF
  start containerd containerd --config "$D/containerd.toml"
  wait_for containerd 60 ctr -a "$sock" version
  pause_image
  load registry.k8s.io/pause:3.10

  cat >"$D/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
failSwapOn: false
failCgroupV1: false
cgroupsPerQOS: false
enforceNodeAllocatable: []
containerRuntimeEndpoint: unix://$sock
imageServiceEndpoint: unix://$sock
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
address: 127.0.0.1
port: $p_kubelet
healthzBindAddress: 127.0.0.1
healthzPort: $p_kubelet_health
readOnlyPort: 0
resolvConf: ""
evictionHard: {}
imageGCHighThresholdPercent: 100
EOF
  start kubelet "$bin/kubelet" --kubeconfig "$D/kubeconfig" --config "$D/kubelet.yaml" \
    --root-dir "$D/kubelet" --hostname-override "$node" --node-ip 127.0.0.1
  wait_for "node $node" 300 node_ready
  log "up in $D: node $node Ready (logs in $D/logs)"
  exports
}

stop() { # name
  local pid
  [[ -f $D/pids/$1 ]] || return 0
  pid=$(cat "$D/pids/$1")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$D/pids/$1"
}

down_quiet() {
  [[ -d $D/pids ]] || return 0
  local t pid
  stop kubelet
  stop kube-scheduler
  stop kube-controller-manager
  stop kube-apiserver
  stop etcd
  if alive containerd; then
    for t in $(ctr -a "$sock" -n k8s.io tasks ls -q 2>/dev/null); do
      ctr -a "$sock" -n k8s.io tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true
    done
    sleep 1
  fi
  stop containerd
  # The runc shims of this containerd name its socket in their command line.
  for pid in $(pgrep -f -- "-address $sock" || true); do kill -9 "$pid" 2>/dev/null || true; done
  # Pod volumes, sandbox /dev/shm and rootfs mounts under our directories, deepest first.
  awk -v d="$D/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  ip link del "$bridge" 2>/dev/null || true
}

down() {
  down_quiet
  log "down ($D kept for its logs)"
}

case ${1:-} in
up) up ;;
down) down ;;
load)
  shift
  load "$@"
  ;;
env) exports ;;
*) die "usage: cluster.sh up|down|load IMAGE...|env" ;;
esac
