package docker

import (
	"context"
	"errors"
	"fmt"
	"github.com/docker/cli/cli/connhelper"
	neturl "net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/client"
)

// Sentinel errors, wrapped with the object they concern.
var (
	ErrUnreachable      = errors.New("docker engine unreachable")
	ErrSSHUnsupported   = errors.New("cannot use this ssh:// docker host")
	ErrNoSuchContainer  = errors.New("no such container")
	ErrNoSuchImage      = errors.New("no such image")
	ErrPortTaken        = errors.New("port already taken")
	ErrContextMissing   = errors.New("build context directory does not exist")
	ErrBuildFailed      = errors.New("image build failed")
	ErrContainerExited  = errors.New("container exited")
	ErrRedactedEnvValue = errors.New("environment value was redacted from the manifest")
)

// PingTimeout bounds the ping that Connect sends.
var PingTimeout = 5 * time.Second

// Client is a connection to one Docker Engine.
type Client struct {
	api  *client.Client
	host string
}

var (
	cacheMu sync.Mutex
	cache   = map[string]*Client{}
)

// HostURL is the URL a host block's docker attribute means: the attribute itself,
// else DOCKER_HOST, else the platform default socket.
func HostURL(declared string) string {
	if declared != "" {
		return declared
	}
	if h := os.Getenv(client.EnvOverrideHost); h != "" {
		return h
	}
	return client.DefaultDockerHost
}

// CheckHost refuses a host attribute no client can be made for, without dialling:
// "" (DOCKER_HOST) and unix://, tcp://, npipe:// or ssh:// URLs are accepted.
func CheckHost(host string) error {
	if host == "" {
		return nil
	}
	if strings.HasPrefix(host, "ssh://") {
		// The host name reaches the ssh command line: refuse anything ssh could
		// read as an option.
		if u, perr := neturl.Parse(host); perr != nil || u.Hostname() == "" || strings.HasPrefix(u.Hostname(), "-") || u.RawQuery != "" {
			return fmt.Errorf("docker host %s: %w: use ssh://[user@]host[:port][/socket path]", host, ErrSSHUnsupported)
		}
		return nil
	}
	if _, err := client.ParseHostURL(host); err != nil {
		return fmt.Errorf("docker host %q: %v; use unix:///var/run/docker.sock, tcp://host:2375 or ssh://user@host", host, err)
	}
	return nil
}

// Connect returns a client for the engine at host (see HostURL) after a bounded
// ping. Successful clients are cached per URL for the life of the process.
func Connect(ctx context.Context, host string) (*Client, error) {
	url := HostURL(host)
	cacheMu.Lock()
	c, ok := cache[url]
	cacheMu.Unlock()
	if ok {
		return c, nil
	}
	opts := []client.Opt{client.WithAPIVersionNegotiation()}
	switch {
	case strings.HasPrefix(url, "ssh://"):
		// As the docker CLI does: run `ssh HOST docker system dial-stdio` and speak
		// the Engine API over its stdio, so any host ssh reaches is a target.
		// The host name reaches the ssh command line: refuse anything ssh could
		// read as an option.
		if err := CheckHost(url); err != nil {
			return nil, err
		}
		helper, err := connhelper.GetConnectionHelper(url)
		if err != nil {
			return nil, fmt.Errorf("docker host %s: %w: %v", url, ErrSSHUnsupported, err)
		}
		opts = append(opts, client.WithHost(helper.Host), client.WithDialContext(helper.Dialer))
	case host == "":
		opts = append([]client.Opt{client.FromEnv}, opts...)
	default:
		opts = append(opts, client.WithHost(url))
	}
	api, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker host %s: %w", url, err)
	}
	pctx, cancel := context.WithTimeout(ctx, PingTimeout)
	defer cancel()
	if _, err := api.Ping(pctx); err != nil {
		api.Close()
		if errors.Is(pctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("docker host %s is unreachable: no answer to ping within %s: %w", url, PingTimeout, ErrUnreachable)
		}
		return nil, fmt.Errorf("docker host %s is unreachable: %v: %w", url, err, ErrUnreachable)
	}
	c = &Client{api: api, host: url}
	cacheMu.Lock()
	if prev, ok := cache[url]; ok {
		cacheMu.Unlock()
		api.Close()
		return prev, nil
	}
	cache[url] = c
	cacheMu.Unlock()
	return c, nil
}

// Host is the engine's URL.
func (c *Client) Host() string { return c.host }

// API is the underlying Engine API client, for tests and the rare call this package
// does not wrap.
func (c *Client) API() *client.Client { return c.api }
