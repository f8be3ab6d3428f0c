package kube

import (
	"context"
	"encoding/json"
	"fmt"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sort"
	"strings"
	"time"

	"github.com/rigor-bench/rigor/steps/internal/docker"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Kind is the kind of a restore manifest this package writes; the file name is the
// Docker runtime's (docker.ManifestFile), whose reader skips other kinds.
const Kind = "kubernetes"

// Saved is the restore manifest of a workload: its full object as the API server
// returned it before a deploy touched it, with secret environment values redacted,
// and its pods' identity (the image IDs restore pins the containers to).
type Saved struct {
	Kind        string          `json:"kind"`
	Workload    string          `json:"workload"` // KindDeployment or KindStatefulSet ("" in older manifests: a Deployment)
	SavedAt     time.Time       `json:"saved_at"`
	Server      string          `json:"server"`
	Namespace   string          `json:"namespace"`
	Identity    docker.Identity `json:"identity"`
	Pods        []Pod           `json:"pods"`
	RedactedEnv []string        `json:"redacted_env,omitempty"`
	Object      json.RawMessage `json:"object"`
}

// Save builds the restore manifest of a workload and its pods.
func (c *Cluster) Save(w Workload, pods []Pod, secrets ...string) (*Saved, error) {
	cp := w.DeepCopy()
	var obj any
	if cp.StatefulSet != nil {
		cp.StatefulSet.APIVersion, cp.StatefulSet.Kind = "apps/v1", KindStatefulSet
		obj = cp.StatefulSet
	} else {
		cp.Deployment.APIVersion, cp.Deployment.Kind = "apps/v1", KindDeployment
		obj = cp.Deployment
	}
	cp.Meta().ManagedFields = nil
	spec := &cp.Template().Spec
	var redacted []string
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			for j, e := range list[i].Env {
				if e.ValueFrom == nil && docker.IsSecretEnv(e.Name, e.Value, secrets) {
					list[i].Env[j].Value = docker.Redacted
					redacted = append(redacted, list[i].Name+"/"+e.Name)
				}
			}
		}
	}
	sort.Strings(redacted)
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return &Saved{Kind: Kind, Workload: w.Ref().kind(), SavedAt: time.Now().UTC(), Server: c.Server, Namespace: c.Namespace,
		Identity: IdentityOf(w, pods), Pods: pods, RedactedEnv: redacted, Object: b}, nil
}

// Ref names the saved workload.
func (s *Saved) Ref() Ref { return Ref{Kind: Ref{Kind: s.Workload}.kind(), Name: s.Identity.Name} }

// ManifestFileOf is the restore manifest's file name for one of several
// workloads a deploy took out of service: restore-manifest.<id>.json, where deploy
// passes "<kind>.<name>" as id.
func ManifestFileOf(name string) string {
	return strings.TrimSuffix(docker.ManifestFile, ".json") + "." + name + ".json"
}

// isManifestFile reports whether a file name is a restore manifest's: the one
// occupant's restore-manifest.json or one of several's ManifestFileOf.
func isManifestFile(name string) bool {
	stem := strings.TrimSuffix(docker.ManifestFile, ".json")
	return name == docker.ManifestFile || (strings.HasPrefix(name, stem+".") && strings.HasSuffix(name, ".json"))
}

// FindSaved returns the newest kubernetes restore manifest under <stateDir>/attempts
// for the named workload in the cluster's namespace, or nil: deploy attempts keep
// theirs even when they fail, so restore needs neither the journal nor a deploy's
// outputs.
func (c *Cluster) FindSaved(stateDir string, r Ref) (*Saved, string, error) {
	var best *Saved
	var bestPath string
	err := docker.EachManifest(stateDir, isManifestFile, func(p string, b []byte) {
		var m Saved
		if json.Unmarshal(b, &m) != nil || m.Kind != Kind {
			return
		}
		if m.Ref() != (Ref{Kind: r.kind(), Name: r.Name}) || m.Namespace != c.Namespace || m.Server != c.Server {
			return
		}
		if best == nil || m.SavedAt.After(best.SavedAt) {
			best, bestPath = &m, p
		}
	})
	return best, bestPath, err
}

// Pinned is the saved workload with each redacted environment value taken from
// env (the live object's, then the plan's), and the one image ID each container's
// pods ran: the digest the restore must bring back and then verify. Where the
// runtime reported a repository digest (repo@sha256:..., an image pulled from a
// registry), the template names the image by it, so the registry can only serve
// those bytes. Otherwise (an image imported into the node, whose ID is a bare
// sha256:...) the template keeps the saved reference, because a kubelet resolves a
// bare image ID to no image on containerd (ErrImageNeverPull, seen on the test
// cluster); a reference that now names another image then fails the restore's
// digest check instead of restoring something else.
func (s *Saved) Pinned(live *Workload, env map[string]string) (Workload, map[string]string, error) {
	var w Workload
	var obj any
	if s.Ref().Kind == KindStatefulSet {
		w.StatefulSet = &appsv1.StatefulSet{}
		obj = w.StatefulSet
	} else {
		w.Deployment = &appsv1.Deployment{}
		obj = w.Deployment
	}
	if err := json.Unmarshal(s.Object, obj); err != nil {
		return Workload{}, nil, fmt.Errorf("restore manifest of %s cannot be read back: %v", s.Ref(), err)
	}
	ids := map[string]map[string]string{} // container -> digest -> the image ID naming it
	for _, p := range s.Pods {
		for _, c := range p.Containers {
			if dg := Digest(c.ImageID); dg != "" {
				if ids[c.Name] == nil {
					ids[c.Name] = map[string]string{}
				}
				ids[c.Name][dg] = strings.TrimPrefix(c.ImageID, "docker-pullable://")
			}
		}
	}
	want := map[string]string{}
	cs := w.Template().Spec.Containers
	for i := range cs {
		if len(ids[cs[i].Name]) == 1 {
			for dg, id := range ids[cs[i].Name] {
				want[cs[i].Name] = dg
				if repo, _, ok := strings.Cut(id, "@"); ok && repo != "" {
					cs[i].Image = repo + "@" + dg
				}
			}
		}
		for j, e := range cs[i].Env {
			if e.Value != docker.Redacted || e.ValueFrom != nil {
				continue
			}
			v, ok := liveEnv(live, cs[i].Name, e.Name)
			if !ok {
				v, ok = env[e.Name]
			}
			if !ok {
				return Workload{}, nil, fmt.Errorf("%s container %s: %w: %s (declare it in the target's env)", s.Ref(), cs[i].Name, docker.ErrRedactedEnvValue, e.Name)
			}
			cs[i].Env[j].Value = v
		}
	}
	return w, want, nil
}

func liveEnv(live *Workload, container, name string) (string, bool) {
	if live == nil {
		return "", false
	}
	for _, c := range live.Template().Spec.Containers {
		if c.Name != container {
			continue
		}
		for _, e := range c.Env {
			if e.Name == name && e.ValueFrom == nil && e.Value != docker.Redacted {
				return e.Value, true
			}
		}
	}
	return "", false
}

// Apply puts a workload's spec in place: an update of the live object when it
// exists, else a create from the saved labels, annotations and spec.
func (c *Cluster) Apply(ctx context.Context, w Workload, live *Workload) error {
	r := w.Ref()
	if live != nil {
		// The controller writes the object's status too: an update from a copy it has
		// since changed conflicts, and is made again on the object as it is now.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			u := live.DeepCopy()
			if u.StatefulSet != nil {
				u.StatefulSet.Spec = w.StatefulSet.Spec
			} else {
				u.Deployment.Spec = w.Deployment.Spec
			}
			u.Meta().Labels, u.Meta().Annotations = w.Meta().Labels, w.Meta().Annotations
			_, err := c.update(ctx, u)
			if apierrors.IsConflict(err) {
				if now, gerr := c.Get(ctx, r); gerr == nil {
					live = &now
				}
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("update %s on %s: %w", c.Named(r), c.Server, err)
		}
		return nil
	}
	if err := c.create(ctx, w); err != nil {
		return fmt.Errorf("create %s on %s: %w", c.Named(r), c.Server, err)
	}
	return nil
}
