package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/docker/docker/api/types/build"
)

// ContextFiles lists the regular files of a build context, relative and sorted.
func ContextFiles(dir string) ([]string, error) {
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return nil, fmt.Errorf("build context %s: %w", dir, ErrContextMissing)
	}
	var out []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// TarContext writes a deterministic tar of a context directory: files in sorted
// order, zero times, no owners, so the same content always has the same sha256.
// Symlinks are kept as links; other special files are skipped.
func TarContext(dir string) ([]byte, string, error) {
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return nil, "", fmt.Errorf("build context %s: %w", dir, ErrContextMissing)
	}
	var paths []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("build context %s: %w", dir, err)
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, "", err
		}
		rel, _ := filepath.Rel(dir, p)
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return nil, "", err
			}
		} else if !fi.Mode().IsRegular() && !fi.IsDir() {
			continue
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return nil, "", err
		}
		hdr.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			hdr.Name += "/"
		}
		hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = unixZero, unixZero, unixZero
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		hdr.Format = tar.FormatPAX
		hdr.PAXRecords = nil
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, "", err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return nil, "", fmt.Errorf("build context file %s: %w", p, err)
			}
			_, err = io.Copy(tw, f)
			f.Close()
			if err != nil {
				return nil, "", err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(buf.Bytes())
	return buf.Bytes(), hex.EncodeToString(sum[:]), nil
}

// BuildOptions are what a build step declares.
type BuildOptions struct {
	Context    string // directory
	Dockerfile string // relative to Context; default Dockerfile
	Tags       []string
	BuildArgs  map[string]string
	Labels     map[string]string
	NanoCPUs   int64 // the build's CPU limit, as CPU quota over a 100 ms period
	Memory     int64 // bytes; swap held to the same limit
}

// BuildResult is a finished build.
type BuildResult struct {
	ImageID       string
	ContextSHA256 string
}

// Build builds an image through the Engine API from a tar of the context. The
// build's own containers are limited to the declared CPUs and memory and removed
// afterwards; running containers are never touched. The engine's output stream goes
// to log.
func (c *Client) Build(ctx context.Context, o BuildOptions, log io.Writer) (BuildResult, error) {
	tarball, sum, err := TarContext(o.Context)
	if err != nil {
		return BuildResult{}, err
	}
	df := o.Dockerfile
	if df == "" {
		df = "Dockerfile"
	}
	if _, err := os.Stat(filepath.Join(o.Context, df)); err != nil {
		return BuildResult{}, fmt.Errorf("build context %s has no %s: %w", o.Context, df, ErrBuildFailed)
	}
	args := map[string]*string{}
	for k, v := range o.BuildArgs {
		args[k] = &v
	}
	opts := build.ImageBuildOptions{
		Tags: o.Tags, Dockerfile: df, BuildArgs: args, Labels: o.Labels,
		Remove: true, ForceRemove: true, PullParent: false, Version: build.BuilderV1,
	}
	if o.NanoCPUs > 0 {
		opts.CPUPeriod = 100000
		opts.CPUQuota = o.NanoCPUs * opts.CPUPeriod / 1e9
	}
	if o.Memory > 0 {
		opts.Memory, opts.MemorySwap = o.Memory, o.Memory
	}
	resp, err := c.api.ImageBuild(ctx, bytes.NewReader(tarball), opts)
	if err != nil {
		return BuildResult{}, fmt.Errorf("build %s on docker host %s: %w", o.Context, c.host, err)
	}
	defer resp.Body.Close()
	id, err := readBuildStream(resp.Body, log)
	if err != nil {
		return BuildResult{ContextSHA256: sum}, fmt.Errorf("build %s on docker host %s: %v: %w", o.Context, c.host, err, ErrBuildFailed)
	}
	if id != "" && !strings.HasPrefix(id, "sha256:") {
		if id, err = c.ImageID(ctx, id); err != nil { // "Successfully built <short ID>"
			return BuildResult{ContextSHA256: sum}, err
		}
	}
	if id == "" && len(o.Tags) > 0 {
		if id, err = c.ImageID(ctx, o.Tags[0]); err != nil {
			return BuildResult{ContextSHA256: sum}, err
		}
	}
	if id == "" {
		return BuildResult{ContextSHA256: sum}, fmt.Errorf("build %s on docker host %s: the engine reported no image ID: %w", o.Context, c.host, ErrBuildFailed)
	}
	return BuildResult{ImageID: id, ContextSHA256: sum}, nil
}

// readBuildStream copies the engine's JSON message stream to log as text and
// returns the built image ID, or the first error message.
func readBuildStream(r io.Reader, log io.Writer) (string, error) {
	dec := json.NewDecoder(r)
	var id string
	for {
		var m struct {
			Stream      string `json:"stream"`
			Status      string `json:"status"`
			Error       string `json:"error"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
			Aux json.RawMessage `json:"aux"`
		}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return id, nil
			}
			return id, fmt.Errorf("reading the build output: %w", err)
		}
		if m.Stream != "" {
			io.WriteString(log, m.Stream)
			if s, ok := strings.CutPrefix(strings.TrimSpace(m.Stream), "Successfully built "); ok && id == "" {
				id = s
			}
		}
		if m.Status != "" {
			io.WriteString(log, m.Status+"\n")
		}
		if len(m.Aux) > 0 {
			var aux struct{ ID string }
			if json.Unmarshal(m.Aux, &aux) == nil && strings.HasPrefix(aux.ID, "sha256:") {
				id = aux.ID
			}
		}
		if m.Error != "" || m.ErrorDetail != nil {
			msg := m.Error
			if msg == "" {
				msg = m.ErrorDetail.Message
			}
			io.WriteString(log, "ERROR: "+msg+"\n")
			return "", errors.New(strings.TrimSpace(msg))
		}
	}
}

var unixZero = time.Unix(0, 0).UTC()
