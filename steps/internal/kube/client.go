package kube

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Sentinel errors, wrapped with the object they concern.
var (
	ErrUnreachable     = errors.New("kubernetes API server unreachable")
	ErrNoSuchWorkload  = errors.New("no such deployment")
	ErrNoConfig        = errors.New("no kubernetes configuration")
	ErrRolloutTimedOut = errors.New("rollout did not complete")
)

// RequestTimeout bounds every API request.
var RequestTimeout = 15 * time.Second

// Cluster is a connection to one namespace of one cluster.
type Cluster struct {
	api       kubernetes.Interface
	Server    string // the API server URL, named in every error about it
	Context   string // the kubeconfig context ("" = in-cluster or the current one)
	Namespace string
}

// connected caches the clusters Connect reached, per kubeconfig, context and
// namespace, for the life of the process, as docker.Connect does: a block inspects
// its target and reads its events many times, each a connection otherwise.
var (
	connectedMu sync.Mutex
	connected   = map[string]*Cluster{}
)

// Connect loads the configuration (kubeconfig and context; "" kubeconfig means
// KUBECONFIG or ~/.kube/config, and the in-cluster service account when neither
// exists), then asks the server for its version within RequestTimeout. A cluster it
// reached is kept and returned again for the same arguments.
func Connect(ctx context.Context, kubeconfig, kubeContext, namespace string) (*Cluster, error) {
	key := kubeconfig + "\x00" + kubeContext + "\x00" + namespace
	connectedMu.Lock()
	c, ok := connected[key]
	connectedMu.Unlock()
	if ok {
		return c, nil
	}
	c, err := connect(ctx, kubeconfig, kubeContext, namespace)
	if err != nil {
		return nil, err
	}
	connectedMu.Lock()
	defer connectedMu.Unlock()
	if prev, ok := connected[key]; ok {
		return prev, nil
	}
	connected[key] = c
	return c, nil
}

func connect(ctx context.Context, kubeconfig, kubeContext, namespace string) (*Cluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	cfg, err := cc.ClientConfig()
	if err != nil && kubeconfig == "" && kubeContext == "" {
		if ic, ierr := rest.InClusterConfig(); ierr == nil {
			cfg, err = ic, nil
		}
	}
	if err != nil {
		where := kubeconfig
		if where == "" {
			where = "KUBECONFIG, ~/.kube/config or the in-cluster service account"
		}
		if kubeContext != "" {
			where += " (context " + kubeContext + ")"
		}
		return nil, fmt.Errorf("%w from %s: %v", ErrNoConfig, where, err)
	}
	if namespace == "" {
		if ns, _, err := cc.Namespace(); err == nil && ns != "" {
			namespace = ns
		} else {
			namespace = "default"
		}
	}
	cfg.Timeout = RequestTimeout
	api, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client for %s: %v", cfg.Host, err)
	}
	c := &Cluster{api: api, Server: cfg.Host, Context: kubeContext, Namespace: namespace}
	vctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	if _, err := api.Discovery().RESTClient().Get().AbsPath("/version").Do(vctx).Raw(); err != nil {
		return nil, fmt.Errorf("%w: %s%s: %v", ErrUnreachable, c.Server, c.contextNote(), err)
	}
	return c, nil
}

func (c *Cluster) contextNote() string {
	if c.Context == "" {
		return ""
	}
	return " (context " + c.Context + ")"
}

// API is the client, for what this package does not wrap.
func (c *Cluster) API() kubernetes.Interface { return c.api }

// Where names the cluster and namespace in messages: "namespace ns on https://…".
func (c *Cluster) Where() string {
	return fmt.Sprintf("namespace %s on %s%s", c.Namespace, c.Server, c.contextNote())
}
