package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
)

// ManifestFile is the name of the restore manifest artefact a deploy writes.
const ManifestFile = "restore-manifest.json"

// Redacted replaces a secret environment value in evidence.
const Redacted = "<redacted>"

var secretName = regexp.MustCompile(`(?i)(key|token|secret|passw|credential)`)

// Manifest is the restore manifest: a container's full inspect JSON, saved before a
// deploy takes it out of service, with secret environment values redacted.
type Manifest struct {
	Kind        string          `json:"kind"` // "docker"
	SavedAt     time.Time       `json:"saved_at"`
	DockerHost  string          `json:"docker_host"`
	Identity    Identity        `json:"identity"`
	RedactedEnv []string        `json:"redacted_env,omitempty"`
	Inspect     json.RawMessage `json:"inspect"`
}

// NewManifest builds a manifest from an inspect JSON, redacting every environment
// value whose name looks secret or whose value is one of the given secrets.
func NewManifest(host string, id Identity, raw []byte, secrets ...string) (*Manifest, error) {
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("manifest of %s: %w", id.Name, err)
	}
	var redacted []string
	if cfg, ok := doc["Config"].(map[string]any); ok {
		if env, ok := cfg["Env"].([]any); ok {
			for i, e := range env {
				s, _ := e.(string)
				k, v, _ := strings.Cut(s, "=")
				if IsSecretEnv(k, v, secrets) {
					env[i] = k + "=" + Redacted
					redacted = append(redacted, k)
				}
			}
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	sort.Strings(redacted)
	return &Manifest{Kind: "docker", SavedAt: time.Now().UTC(), DockerHost: host, Identity: id, RedactedEnv: redacted, Inspect: b}, nil
}

// IsSecretEnv reports whether an environment variable must not reach evidence: its
// name looks secret, or its value is one of the given secrets.
func IsSecretEnv(k, v string, secrets []string) bool {
	if secretName.MatchString(k) {
		return true
	}
	for _, s := range secrets {
		if s != "" && v == s {
			return true
		}
	}
	return false
}

// FindManifest returns the newest docker restore manifest under
// <stateDir>/attempts for the named container on the given host, or nil. Deploy
// attempts keep their manifests even when they fail, so restore finds the incumbent
// without reading the journal or depending on a deploy's outputs (a failed deploy
// has none).
func FindManifest(stateDir, host, name string) (*Manifest, string, error) {
	var best *Manifest
	var bestPath string
	err := EachManifest(stateDir, func(file string) bool { return file == ManifestFile }, func(p string, b []byte) {
		var m Manifest
		if json.Unmarshal(b, &m) != nil || m.Kind != "docker" {
			return // a simulator or kubernetes manifest, or not ours
		}
		if m.Identity.Name != name || (host != "" && m.DockerHost != host) {
			return
		}
		if best == nil || m.SavedAt.After(best.SavedAt) {
			best, bestPath = &m, p
		}
	})
	return best, bestPath, err
}

// EachManifest calls visit with the path and bytes of every file under
// <stateDir>/attempts whose name isManifest accepts: the restore manifests deploy
// attempts left, whatever their runtime. A state without attempts has none.
func EachManifest(stateDir string, isManifest func(name string) bool, visit func(path string, b []byte)) error {
	root := filepath.Join(stateDir, "attempts")
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && p == root {
				return filepath.SkipDir
			}
			return err
		}
		if d.IsDir() || !isManifest(d.Name()) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("read restore manifest %s: %w", p, err)
		}
		visit(p, b)
		return nil
	})
}

// Recreate creates a container again from a manifest under its recorded name, with
// its exact image ID. Redacted environment values are taken from env (the plan's
// declaration); one that the plan does not declare is ErrRedactedEnvValue.
func (c *Client) Recreate(ctx context.Context, m *Manifest, env map[string]string) (string, error) {
	var r container.InspectResponse
	if err := json.Unmarshal(m.Inspect, &r); err != nil || r.ContainerJSONBase == nil || r.Config == nil {
		return "", fmt.Errorf("restore manifest of %s cannot be read back: %v", m.Identity.Name, err)
	}
	cfg, hc := r.Config, r.HostConfig
	cfg.Image = r.Image // the exact image ID, not the tag it was created from
	for i, e := range cfg.Env {
		k, v, _ := strings.Cut(e, "=")
		if v != Redacted {
			continue
		}
		val, ok := env[k]
		if !ok {
			return "", fmt.Errorf("recreate %s: env %s: %w; declare it in the target's env", m.Identity.Name, k, ErrRedactedEnvValue)
		}
		cfg.Env[i] = k + "=" + val
	}
	return c.create(ctx, m.Identity.Name, cfg, hc)
}
