#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kube-scheduler and kubelet from the Go
# module k8s.io/kubernetes through the module proxy, once per version: the binaries land in
# ${RIGOR_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rigor/kube}/<version>/bin and a later
# run finds them there. The module zip lacks the staging modules its go.mod replaces with
# ./staging paths, so a small module of our own requires k8s.io/kubernetes and points each
# staging module at its published v0.<minor>.<patch> release instead.
# Prints the bin directory on stdout; progress goes to stderr.
set -euo pipefail
version=${RIGOR_KUBE_VERSION:-v1.34.2}
cache=${RIGOR_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rigor/kube}/$version
bin=$cache/bin
bins=(kube-apiserver kube-controller-manager kube-scheduler kubelet)
have=1
for b in "${bins[@]}"; do [[ -x $bin/$b ]] || have=0; done
if [[ $have == 1 ]]; then
  echo "$bin"
  exit 0
fi
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
staging=v0.${version#v1.}
src=$cache/src
rm -rf "$src"
mkdir -p "$src" "$bin"
cd "$src"
gomod=$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
[[ -f $gomod ]] || { echo "build.sh: no go.mod for k8s.io/kubernetes@$version from the module proxy" >&2; exit 1; }
{
  echo "module rigor.local/kubebuild"
  echo
  echo "go $(sed -n 's/^go \([0-9.]*\)$/\1/p' "$gomod")"
  echo
  echo "require k8s.io/kubernetes $version"
  echo
  sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/[a-z0-9-]*$#replace \1 => \1 '"$staging"'#p' "$gomod"
} >go.mod
n=$(grep -c '^replace' go.mod)
[[ $n -gt 20 ]] || { echo "build.sh: found only $n staging replace lines in $gomod" >&2; exit 1; }
main() { # dir import call
  mkdir -p "cmd/$1"
  cat >"cmd/$1/main.go" <<GO
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"$2"
)

func main() { os.Exit(cli.Run($3)) }
GO
}
main kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver/app 'app.NewAPIServerCommand()'
main kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager/app 'app.NewControllerManagerCommand()'
main kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler/app 'app.NewSchedulerCommand()'
mkdir -p cmd/kubelet
cat >cmd/kubelet/main.go <<'GO'
package main

import (
	"context"
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kubelet/app"
)

func main() { os.Exit(cli.Run(app.NewKubeletCommand(context.Background()))) }
GO
echo "build.sh: go mod tidy for k8s.io/kubernetes $version ($n staging modules at $staging)" >&2
go mod tidy >&2
minor=${version#v1.}; minor=${minor%%.*}
ld="-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
ld="$ld -X k8s.io/client-go/pkg/version.gitVersion=$version -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
start=$SECONDS
echo "build.sh: building ${bins[*]} (about 10 minutes on 2 cores from a cold build cache)" >&2
nice -n 19 go build -trimpath -ldflags "$ld" -o "$bin/" ./cmd/... >&2
echo "build.sh: built in $((SECONDS - start)) s into $bin" >&2
echo "$bin"
