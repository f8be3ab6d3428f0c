package kube

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func deployment(replicas int32) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "sim"}}
	d.Spec.Replicas = &replicas
	return d
}

func pod(uid string, restarts int, state, last string, ready bool) Pod {
	return Pod{Name: "p-" + uid, UID: uid, Ready: ready, RestartCount: restarts, StartedAt: time.Unix(100, 0),
		Containers: []Container{{Name: "sim", ImageID: "docker.io/library/x@sha256:aa", ContainerID: "containerd://c-" + uid, RestartCount: restarts, State: state, LastReason: last}}}
}

func TestIdentityOf(t *testing.T) {
	cases := map[string]struct {
		d    *appsv1.Deployment
		pods []Pod
		want []string // status, health, incarnation, container IDs, image ID
		oom  bool
	}{
		"running": {deployment(2), []Pod{pod("b", 1, "running", "Error", true), pod("a", 0, "running", "", true)},
			[]string{"running", "healthy", "a/0,b/1", "containerd://c-a,containerd://c-b", "sha256:aa"}, false},
		"oom killed and restarting": {deployment(1), []Pod{pod("a", 1, "waiting: CrashLoopBackOff", "OOMKilled", false)},
			[]string{"0 of 1 pods running (1 live)", "unhealthy", "a/1", "containerd://c-a", "sha256:aa"}, true},
		"scaled to 0": {deployment(0), nil, []string{"scaled to 0", "none", "", "", ""}, false},
		"pod being replaced": {deployment(1), []Pod{func() Pod { p := pod("a", 0, "running", "", true); p.Deleting = true; return p }()},
			[]string{"no pods", "none", "", "", ""}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			id := IdentityOf(Workload{Deployment: tc.d}, tc.pods)
			got := []string{id.Status, id.Health, id.Incarnation, id.ContainerID, id.ImageID}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Error(diff)
			}
			if id.OOMKilled != tc.oom {
				t.Errorf("OOMKilled %v, want %v", id.OOMKilled, tc.oom)
			}
		})
	}
}

// A StatefulSet's identity reads its own replicas and template.
func TestIdentityOfStatefulSet(t *testing.T) {
	two := int32(2)
	ss := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "sts"}}
	ss.Spec.Replicas = &two
	ss.Spec.Template.Spec.Containers = []corev1.Container{{Name: "sim", Image: "sim:incumbent"}}
	id := IdentityOf(Workload{StatefulSet: ss}, []Pod{pod("a", 0, "running", "", true)})
	if id.Name != "sts" || id.Image != "sim:incumbent" || id.Status != "1 of 2 pods running (1 live)" {
		t.Errorf("identity %+v; want the StatefulSet's name, image and its 2 replicas", id)
	}
	if w := (Workload{StatefulSet: ss}); w.Ref() != StatefulSet("sts") || w.Ref().String() != "statefulset sts" {
		t.Errorf("ref %+v", w.Ref())
	}
}

func TestStuck(t *testing.T) {
	if e := Stuck("deployment ns/sim", []Pod{pod("a", 1, "running", "OOMKilled", true)}); e == nil || !e.OOM() || e.Error() != "deployment ns/sim: pod p-a container sim: OOMKilled (exit code 0)" {
		t.Errorf("%v", e)
	}
	if e := Stuck("ns/sim", []Pod{pod("a", 0, "waiting: ErrImageNeverPull", "", false)}); e == nil || e.Reason != "ErrImageNeverPull" {
		t.Errorf("%v", e)
	}
	if e := Stuck("ns/sim", []Pod{pod("a", 0, "running", "", true)}); e != nil {
		t.Errorf("a running pod is not stuck: %v", e)
	}
}
