package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

// The deployment in deploy/: the Kubernetes manifests (deploy/kubernetes,
// applied with kubectl apply -k) and the Helm chart (deploy/helm/junction).
// The tests check them with the real tools, offline: kustomize build, helm
// lint and helm template, and kubectl-validate (Kubernetes SIG CLI's
// schema validator, with Kubernetes' OpenAPI schemas built in) on every
// object, the manifests and the chart's output alike. Then they run what
// the Deployment runs: the container's arguments and environment, its
// volumes as directories (the ConfigMap's files in the config mount),
// against the binary built for this run, and probe it as the kubelet and
// a client in the cluster do.

const (
	// envK8sTools is the folder holding helm, kustomize and
	// kubectl-validate (scripts/k8s-tools builds them into .tools/k8s/bin).
	envK8sTools = "JUNCTION_K8S_TOOLS"
	// k8sSchemaVersion is the Kubernetes version whose built-in schemas
	// kubectl-validate checks against: the newest it carries.
	k8sSchemaVersion = "1.30"
	// k8sOldestVersion is the oldest Kubernetes the chart allows
	// (kubeVersion in Chart.yaml); the objects are checked against its
	// schemas too.
	k8sOldestVersion = "1.25"
	// deployTimeout bounds each run of one of the tools.
	deployTimeout = 2 * time.Minute
)

// k8sTools are the programs that check deploy/.
type k8sTools struct {
	helm, kustomize, validate string
}

// needK8sTools returns helm, kustomize and kubectl-validate from
// JUNCTION_K8S_TOOLS, skipping the test when they are missing (failing
// it under JUNCTION_REQUIRE_TOOLS=1).
func needK8sTools(t *testing.T) k8sTools {
	t.Helper()
	const what = "helm, kustomize and kubectl-validate"
	dir := os.Getenv(envK8sTools)
	if dir == "" {
		toolsMissing(t, what, envK8sTools+` is not set (run eval "$(bash scripts/k8s-tools --env)", or use bash scripts/test)`)
	}
	tools := k8sTools{filepath.Join(dir, "helm"), filepath.Join(dir, "kustomize"), filepath.Join(dir, "kubectl-validate")}
	for _, p := range []string{tools.helm, tools.kustomize, tools.validate} {
		if _, err := os.Stat(p); err != nil {
			toolsMissing(t, what, fmt.Sprintf("%s=%s: %v (run bash scripts/k8s-tools)", envK8sTools, dir, err))
		}
	}
	return tools
}

// repoRoot is the repository's root folder.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// runTool runs a helm, kustomize or kubectl-validate command line,
// bounded in time, with no cluster within reach: no kubeconfig, no
// in-cluster variables, so kubectl-validate takes the schemas it has
// built in. It returns stdout, and stderr folded into the error.
func runTool(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), deployTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	scratch := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "KUBECONFIG" || k == "HOME" || strings.HasPrefix(k, "KUBERNETES_") || strings.HasPrefix(k, "HELM_") {
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = append(env, "HOME="+scratch, "KUBECONFIG="+filepath.Join(scratch, "no-kubeconfig"),
		"HELM_CACHE_HOME="+filepath.Join(scratch, "cache"), "HELM_CONFIG_HOME="+filepath.Join(scratch, "config"), "HELM_DATA_HOME="+filepath.Join(scratch, "data"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %v\n%s%s", filepath.Base(name), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// kubeValidate runs kubectl-validate on files, against the schemas of
// the newest and the oldest Kubernetes the deployment is for, and fails
// the test with its report unless every object of every file is valid.
func kubeValidate(t *testing.T, validate string, files ...string) {
	t.Helper()
	for _, v := range []string{k8sSchemaVersion, k8sOldestVersion} {
		kubeValidateAt(t, validate, v, files...)
	}
}

func kubeValidateAt(t *testing.T, validate, version string, files ...string) {
	t.Helper()
	args := append([]string{"--version", version, "--output", "json"}, files...)
	out, err := runTool(t, validate, args...)
	if err != nil {
		t.Fatalf("kubectl-validate (Kubernetes %s) found invalid objects:\n%v", version, err)
	}
	var report map[string][]struct {
		Status  string `json:"status"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("kubectl-validate's report: %v\n%s", err, out)
	}
	for _, f := range files {
		if len(report[f]) == 0 {
			t.Errorf("kubectl-validate (Kubernetes %s) checked no object in %s:\n%s", version, f, out)
		}
		for _, r := range report[f] {
			if r.Status != "Success" {
				t.Errorf("kubectl-validate (Kubernetes %s) on %s: %s %s", version, f, r.Status, r.Message)
			}
		}
	}
}

// object is one Kubernetes object of a manifest: its kind and name, and
// the YAML to decode into the type of its kind.
type object struct {
	Kind string
	Name string
	node *yaml.Node
}

// parseObjects reads every YAML document of data (skipping empty ones, as
// helm template leaves some).
func parseObjects(t *testing.T, what string, data []byte) []object {
	t.Helper()
	var objs []object
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			continue
		}
		var head struct {
			APIVersion string `yaml:"apiVersion"`
			Kind       string `yaml:"kind"`
			Metadata   struct {
				Name string `yaml:"name"`
			} `yaml:"metadata"`
		}
		if err := doc.Decode(&head); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if head.Kind == "" || head.APIVersion == "" || head.Metadata.Name == "" {
			t.Fatalf("%s: a document without apiVersion, kind or metadata.name (line %d)", what, doc.Line)
		}
		objs = append(objs, object{Kind: head.Kind, Name: head.Metadata.Name, node: &doc})
	}
	return objs
}

// only decodes the one object of kind in objs into into, failing the test
// if there is not exactly one.
func only(t *testing.T, objs []object, kind string, into any) {
	t.Helper()
	var found []object
	for _, o := range objs {
		if o.Kind == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s, have %d", kind, len(found))
	}
	if err := found[0].node.Decode(into); err != nil {
		t.Fatalf("%s %s: %v", kind, found[0].Name, err)
	}
}

// The parts of the objects the tests look at (field names as in the
// Kubernetes API).
type (
	meta struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	}
	k8sDeployment struct {
		Metadata meta `yaml:"metadata"`
		Spec     struct {
			Replicas int `yaml:"replicas"`
			Selector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
			Template struct {
				Metadata meta    `yaml:"metadata"`
				Spec     podSpec `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	podSpec struct {
		AutomountServiceAccountToken  *bool `yaml:"automountServiceAccountToken"`
		EnableServiceLinks            *bool `yaml:"enableServiceLinks"`
		TerminationGracePeriodSeconds int   `yaml:"terminationGracePeriodSeconds"`
		SecurityContext               struct {
			RunAsNonRoot   *bool `yaml:"runAsNonRoot"`
			RunAsUser      int64 `yaml:"runAsUser"`
			RunAsGroup     int64 `yaml:"runAsGroup"`
			FSGroup        int64 `yaml:"fsGroup"`
			SeccompProfile struct {
				Type string `yaml:"type"`
			} `yaml:"seccompProfile"`
		} `yaml:"securityContext"`
		Containers []container `yaml:"containers"`
		Volumes    []volume    `yaml:"volumes"`
	}
	volume struct {
		Name      string `yaml:"name"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
		EmptyDir *struct {
			Medium    string `yaml:"medium"`
			SizeLimit string `yaml:"sizeLimit"`
		} `yaml:"emptyDir"`
	}
	secretRef struct {
		Name string `yaml:"name"`
		Key  string `yaml:"key"`
	}
	containerPort struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	}
	container struct {
		Image string   `yaml:"image"`
		Args  []string `yaml:"args"`
		Env   []struct {
			Name      string `yaml:"name"`
			Value     string `yaml:"value"`
			ValueFrom *struct {
				SecretKeyRef *secretRef `yaml:"secretKeyRef"`
				FieldRef     *struct {
					FieldPath string `yaml:"fieldPath"`
				} `yaml:"fieldRef"`
			} `yaml:"valueFrom"`
		} `yaml:"env"`
		Ports          []containerPort `yaml:"ports"`
		ReadinessProbe *probe          `yaml:"readinessProbe"`
		LivenessProbe  *probe          `yaml:"livenessProbe"`
		Resources      struct {
			Requests map[string]string `yaml:"requests"`
			Limits   map[string]string `yaml:"limits"`
		} `yaml:"resources"`
		SecurityContext struct {
			ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
			AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
			Capabilities             struct {
				Drop []string `yaml:"drop"`
			} `yaml:"capabilities"`
		} `yaml:"securityContext"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
			ReadOnly  bool   `yaml:"readOnly"`
		} `yaml:"volumeMounts"`
	}
	probe struct {
		PeriodSeconds    int `yaml:"periodSeconds"`
		TimeoutSeconds   int `yaml:"timeoutSeconds"`
		FailureThreshold int `yaml:"failureThreshold"`
		HTTPGet          *struct {
			Path        string `yaml:"path"`
			Port        string `yaml:"port"`
			HTTPHeaders []struct {
				Name  string `yaml:"name"`
				Value string `yaml:"value"`
			} `yaml:"httpHeaders"`
		} `yaml:"httpGet"`
	}
	k8sConfigMap struct {
		Metadata meta              `yaml:"metadata"`
		Data     map[string]string `yaml:"data"`
	}
	k8sService struct {
		Metadata meta `yaml:"metadata"`
		Spec     struct {
			Selector        map[string]string `yaml:"selector"`
			SessionAffinity string            `yaml:"sessionAffinity"`
			Ports           []struct {
				Port       int    `yaml:"port"`
				TargetPort string `yaml:"targetPort"`
			} `yaml:"ports"`
		} `yaml:"spec"`
	}
	k8sPDB struct {
		Spec struct {
			MaxUnavailable int `yaml:"maxUnavailable"`
			Selector       struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
		} `yaml:"spec"`
	}
	k8sSecret struct {
		Metadata meta              `yaml:"metadata"`
		Data     map[string]string `yaml:"data"`
	}
)

// deployment is the hub's objects as one deployment of it has them.
type deployment struct {
	Deployment k8sDeployment
	ConfigMap  k8sConfigMap
	Service    k8sService
	PDB        k8sPDB
}

// readDeployment picks the hub's objects out of objs and checks what
// every deployment of junction must hold, whichever way it was made:
// the token from a Secret, both probes on paths that need no token, a
// non-root container on a read-only root filesystem with requests and
// limits, and a Service and PodDisruptionBudget that select its pods.
func readDeployment(t *testing.T, objs []object) *deployment {
	t.Helper()
	d := &deployment{}
	only(t, objs, "Deployment", &d.Deployment)
	only(t, objs, "ConfigMap", &d.ConfigMap)
	only(t, objs, "Service", &d.Service)
	only(t, objs, "PodDisruptionBudget", &d.PDB)

	dep := d.Deployment
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("Deployment: want one container, have %d", len(pod.Containers))
	}
	c := pod.Containers[0]
	if dep.Spec.Replicas < 2 {
		t.Errorf("Deployment: replicas %d; with one, the PodDisruptionBudget lets a drain take the only pod", dep.Spec.Replicas)
	}
	if !subset(dep.Spec.Selector.MatchLabels, dep.Spec.Template.Metadata.Labels) || len(dep.Spec.Selector.MatchLabels) == 0 {
		t.Errorf("Deployment: selector %v does not match the pod labels %v", dep.Spec.Selector.MatchLabels, dep.Spec.Template.Metadata.Labels)
	}
	if !subset(d.Service.Spec.Selector, dep.Spec.Template.Metadata.Labels) || len(d.Service.Spec.Selector) == 0 {
		t.Errorf("Service: selector %v does not match the pod labels %v", d.Service.Spec.Selector, dep.Spec.Template.Metadata.Labels)
	}
	if !subset(d.PDB.Spec.Selector.MatchLabels, dep.Spec.Template.Metadata.Labels) || len(d.PDB.Spec.Selector.MatchLabels) == 0 {
		t.Errorf("PodDisruptionBudget: selector %v does not match the pod labels %v", d.PDB.Spec.Selector.MatchLabels, dep.Spec.Template.Metadata.Labels)
	}
	if d.PDB.Spec.MaxUnavailable < 1 || d.PDB.Spec.MaxUnavailable >= dep.Spec.Replicas {
		t.Errorf("PodDisruptionBudget: maxUnavailable %d with %d replicas", d.PDB.Spec.MaxUnavailable, dep.Spec.Replicas)
	}
	if len(d.Service.Spec.Ports) != 1 || !slices.ContainsFunc(c.Ports, func(p containerPort) bool {
		return p.Name == d.Service.Spec.Ports[0].TargetPort && p.ContainerPort == 7331
	}) {
		t.Errorf("Service: ports %+v do not reach the container's port 7331 (%+v)", d.Service.Spec.Ports, c.Ports)
	}

	if !isTrue(pod.SecurityContext.RunAsNonRoot) || pod.SecurityContext.RunAsUser == 0 {
		t.Errorf("pod: runAsNonRoot %v, runAsUser %d; want a non-root user", pod.SecurityContext.RunAsNonRoot, pod.SecurityContext.RunAsUser)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("pod: the service account token is mounted; junction does not talk to the Kubernetes API")
	}
	sc := c.SecurityContext
	if !isTrue(sc.ReadOnlyRootFilesystem) || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) {
		t.Errorf("container: securityContext %+v; want a read-only root filesystem, no privilege escalation, all capabilities dropped", sc)
	}
	for _, r := range []string{"cpu", "memory"} {
		if c.Resources.Requests[r] == "" || c.Resources.Limits[r] == "" {
			t.Errorf("container: resources %+v; want requests and limits of cpu and memory", c.Resources)
		}
	}
	for _, p := range []struct {
		name  string
		probe *probe
		path  string
	}{{"readinessProbe", c.ReadinessProbe, "/readyz"}, {"livenessProbe", c.LivenessProbe, "/healthz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port != "http" {
			t.Fatalf("container: %s %+v; want GET %s on port http", p.name, p.probe, p.path)
		}
		if h := p.probe.HTTPGet.HTTPHeaders; len(h) != 1 || h[0].Name != "Host" || h[0].Value != "localhost" {
			t.Errorf("container: %s sends headers %+v; want Host: localhost (junction refuses the pod IP as a Host)", p.name, h)
		}
	}
	if i := slices.Index(c.Args, "-http"); i < 0 || i+1 >= len(c.Args) || c.Args[i+1] != "0.0.0.0:7331" || c.Args[0] != "serve" {
		t.Errorf("container: args %q; want serve -http 0.0.0.0:7331", c.Args)
	}
	if ref := c.secretEnv("JUNCTION_TOKEN"); ref == nil || ref.Name == "" || ref.Key == "" {
		t.Fatal("container: JUNCTION_TOKEN does not come from a Secret")
	}
	return d
}

// secretEnv returns the Secret reference of the container's variable
// name, or nil.
func (c *container) secretEnv(name string) *secretRef {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil {
			return e.ValueFrom.SecretKeyRef
		}
	}
	return nil
}

func subset(sub, of map[string]string) bool {
	for k, v := range sub {
		if of[k] != v {
			return false
		}
	}
	return true
}

func isTrue(b *bool) bool { return b != nil && *b }

// samePod is d's pod spec without what differs by design between the
// manifests and the chart: the container's image, its -allowed-host
// names (the chart knows its namespace, the manifests take the pod's),
// the POD_NAMESPACE variable that gives the manifests theirs, and the
// ConfigMap's and Secret's names.
func samePod(d *deployment) podSpec {
	pod := d.Deployment.Spec.Template.Spec
	c := pod.Containers[0]
	var args []string
	for i := 0; i < len(c.Args); i++ {
		if c.Args[i] == "-allowed-host" {
			i++
			continue
		}
		args = append(args, c.Args[i])
	}
	c.Args, c.Image = args, ""
	env := c.Env[:0:0]
	for _, e := range c.Env {
		if e.Name == "POD_NAMESPACE" {
			continue
		}
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			ref := *e.ValueFrom.SecretKeyRef
			ref.Name = ""
			vf := *e.ValueFrom
			vf.SecretKeyRef = &ref
			e.ValueFrom = &vf
		}
		env = append(env, e)
	}
	c.Env = env
	pod.Containers = []container{c}
	vols := make([]volume, len(pod.Volumes))
	for i, v := range pod.Volumes {
		if v.ConfigMap != nil {
			v.ConfigMap = &struct {
				Name string `yaml:"name"`
			}{}
		}
		vols[i] = v
	}
	pod.Volumes = vols
	return pod
}

// kubeVar is Kubernetes' $(VAR) reference in a container's args.
var kubeVar = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// runPod runs the Deployment's container as the kubelet would, with the
// junction binary of this run: its volumes are folders of a scratch
// directory (the ConfigMap's files in a ConfigMap volume), its mount paths
// in the arguments point there, its variables come from secrets (name ->
// key -> value) and the pod's namespace, and $(VAR) in its arguments is
// expanded. The listen address is the one thing changed: 127.0.0.1:0
// instead of 0.0.0.0:7331. It checks the config file with "junction config
// check" first, then starts serve and returns it.
func runPod(t *testing.T, d *deployment, namespace string, secrets map[string]map[string]string) *serveProc {
	t.Helper()
	pod := d.Deployment.Spec.Template.Spec
	c := pod.Containers[0]
	scratch := t.TempDir()
	mounts := map[string]string{} // mount path -> folder
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(pod.Volumes, func(v volume) bool { return v.Name == m.Name })
		if i < 0 {
			t.Fatalf("volumeMount %s names no volume", m.Name)
		}
		v := pod.Volumes[i]
		dir := filepath.Join(scratch, v.Name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		switch {
		case v.ConfigMap != nil:
			if v.ConfigMap.Name != d.ConfigMap.Metadata.Name {
				t.Fatalf("volume %s: ConfigMap %q, want the hub's %q", v.Name, v.ConfigMap.Name, d.ConfigMap.Metadata.Name)
			}
			if !m.ReadOnly {
				t.Errorf("volume %s: the config is mounted writable", v.Name)
			}
			for name, content := range d.ConfigMap.Data {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
		case v.EmptyDir != nil:
		default:
			t.Fatalf("volume %s: neither a ConfigMap nor an emptyDir", v.Name)
		}
		mounts[m.MountPath] = dir
	}

	// onVolume maps a path in the container to its folder, failing the
	// test for a path on no volume (the root filesystem is read-only).
	onVolume := func(what, p string) string {
		mp := "" // the longest mount path that holds p
		for m := range mounts {
			if rel, ok := strings.CutPrefix(p, m); ok && (rel == "" || rel[0] == '/') && len(m) > len(mp) {
				mp = m
			}
		}
		if mp == "" {
			t.Fatalf("%s %q: a path on no volume (the root filesystem is read-only)", what, p)
		}
		return mounts[mp] + strings.TrimPrefix(p, mp)
	}

	vars := map[string]string{}
	// The image sets no XDG variables: junction's per-user folders come
	// from HOME, as in the pod.
	env := []string{"XDG_STATE_HOME=", "XDG_CONFIG_HOME=", "XDG_CACHE_HOME=", "XDG_DATA_HOME="}
	for _, e := range c.Env {
		val := e.Value
		switch {
		case e.ValueFrom == nil:
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			v, ok := secrets[ref.Name][ref.Key]
			if !ok {
				t.Fatalf("env %s: no Secret %s with key %s", e.Name, ref.Name, ref.Key)
			}
			val = v
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			val = namespace
		default:
			t.Fatalf("env %s: a source the test does not know", e.Name)
		}
		vars[e.Name] = val
		if e.Name == "HOME" {
			val = onVolume("env HOME", val)
		}
		env = append(env, e.Name+"="+val)
	}
	if vars["HOME"] == "" {
		t.Error("container: no HOME on a volume; the image's /home/nonroot is on the read-only root filesystem")
	}

	var args []string
	for i := 1; i < len(c.Args); i++ { // c.Args[0] is serve
		a := kubeVar.ReplaceAllStringFunc(c.Args[i], func(ref string) string {
			v, ok := vars[kubeVar.FindStringSubmatch(ref)[1]]
			if !ok {
				t.Fatalf("arg %q: %s is not in the container's env", c.Args[i], ref)
			}
			return v
		})
		if a == "-http" { // startServerEnv listens on 127.0.0.1:0
			i++
			continue
		}
		if strings.HasPrefix(a, "/") {
			a = onVolume("arg", a)
		}
		args = append(args, a)
	}
	configCheck(t, args[slices.Index(args, "-config")+1], env)
	return startServerEnv(t, env, args...)
}

// storeURL stands for a PostgreSQL store's URL, for config check (which
// checks its form and does not connect).
const storeURL = "postgres://junction:pw@db.tools.svc:5432/junction"

// checkConfigMap runs "junction config check" on the junction.yaml of cm,
// with env (KEY=VALUE) added to its environment.
func checkConfigMap(t *testing.T, cm k8sConfigMap, env ...string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "junction.yaml")
	if err := os.WriteFile(file, []byte(cm.Data["junction.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	configCheck(t, file, env)
}

// configCheck runs "junction config check" on a config file of a
// ConfigMap, with env (KEY=VALUE) added to its environment.
func configCheck(t *testing.T, file string, env []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), deployTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, junctionBin(t), "config", "check", file)
	cmd.Env = append(childEnv(t.TempDir()), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("junction config check on the ConfigMap's %s: %v\n%s", path.Base(file), err, out)
	}
}

// podIP stands for the pod's address: the Host the kubelet sends with a
// probe that sets none.
const podIP = "10.1.2.3:7331"

// probePod checks what the kubelet and clients see of a running pod: the
// container's readiness probe passes (within 10 s) and its liveness probe
// too, each sent as the kubelet sends it (no token; the probe's Host
// header, or the pod's IP); the pod's IP is refused as a Host; /status
// through every Service name given as an allowed Host answers with the
// token and 401 without it; an MCP client connects with the token.
func probePod(t *testing.T, p *serveProc, c container, token string, serviceHosts []string) {
	t.Helper()
	base := "http://" + p.Addr
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	get := func(path, host, token string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	kubelet := func(pr *probe) (int, string) {
		t.Helper()
		host := podIP
		for _, h := range pr.HTTPGet.HTTPHeaders {
			if strings.EqualFold(h.Name, "Host") {
				host = h.Value
			}
		}
		return get(pr.HTTPGet.Path, host, "")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := kubelet(c.ReadinessProbe)
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readiness probe (GET %s) = %d %s after 10 s", c.ReadinessProbe.HTTPGet.Path, code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, body := kubelet(c.LivenessProbe); code != http.StatusOK {
		t.Errorf("liveness probe (GET %s) = %d %s", c.LivenessProbe.HTTPGet.Path, code, body)
	}
	if code, _ := get("/healthz", podIP, ""); code != http.StatusForbidden {
		t.Errorf("/healthz with the pod's IP as Host = %d, want 403 (why the probes send Host: localhost)", code)
	}
	for _, h := range serviceHosts {
		if code, body := get("/status", h+":7331", token); code != http.StatusOK {
			t.Errorf("/status through Service name %s with the token = %d %s", h, code, body)
		}
		if code, _ := get("/status", h+":7331", ""); code != http.StatusUnauthorized {
			t.Errorf("/status through Service name %s without a token = %d, want 401", h, code)
		}
	}
	connectHTTP(t, base+"/mcp", token)
}

// helmTestPod runs the chart's test hook (helm test): its container's
// junction command, with the binary of this run, against the running pod
// p in place of the Service. It must list the hub's tools with the token
// from the Secret, and fail with a wrong one; the hook's pod must not be
// one the Service or the PodDisruptionBudget selects.
func helmTestPod(t *testing.T, objs []object, d *deployment, p *serveProc, token string) {
	t.Helper()
	var pod struct {
		Metadata struct {
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"metadata"`
		Spec podSpec `yaml:"spec"`
	}
	only(t, objs, "Pod", &pod)
	if pod.Metadata.Annotations["helm.sh/hook"] != "test" || len(pod.Spec.Containers) != 1 {
		t.Fatalf("the Pod is not a helm test hook with one container: %+v", pod.Metadata)
	}
	if subset(d.Service.Spec.Selector, pod.Metadata.Labels) || subset(d.PDB.Spec.Selector.MatchLabels, pod.Metadata.Labels) {
		t.Errorf("the test pod's labels %v are selected by the Service or the PodDisruptionBudget", pod.Metadata.Labels)
	}
	c := pod.Spec.Containers[0]
	i := slices.Index(c.Args, "-url")
	if i < 0 || i+1 >= len(c.Args) {
		t.Fatalf("test pod: args %q without -url", c.Args)
	}
	u, err := url.Parse(c.Args[i+1])
	if err != nil {
		t.Fatal(err)
	}
	if u.Port() != "7331" || !slices.Contains(allowedHosts(d.Deployment.Spec.Template.Spec.Containers[0], nil), u.Hostname()) {
		t.Errorf("test pod: -url %s is not the Service's name and port", u)
	}
	u.Host = p.Addr
	args := slices.Clone(c.Args)
	args[i+1] = u.String()
	ref := c.secretEnv("JUNCTION_TOKEN")
	if ref == nil || ref.Name != d.Deployment.Spec.Template.Spec.Containers[0].secretEnv("JUNCTION_TOKEN").Name {
		t.Fatalf("test pod: JUNCTION_TOKEN from %+v, not the hub's Secret", ref)
	}
	run := func(token string) (string, error) {
		ctx, cancel := context.WithTimeout(t.Context(), deployTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, junctionBin(t), args...)
		cmd.Env = append(childEnv(t.TempDir()), "HOME="+t.TempDir(), "JUNCTION_TOKEN="+token)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(token); err != nil || !strings.Contains(out, "junction_version") {
		t.Errorf("helm test's junction %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if out, err := run(token + "x"); err == nil {
		t.Errorf("helm test's command passed with a wrong token:\n%s", out)
	}
}

// allowedHosts returns the container's -allowed-host values, with $(VAR)
// expanded from vars.
func allowedHosts(c container, vars map[string]string) []string {
	var hosts []string
	for i := 0; i+1 < len(c.Args); i++ {
		if c.Args[i] == "-allowed-host" {
			hosts = append(hosts, kubeVar.ReplaceAllStringFunc(c.Args[i+1], func(ref string) string {
				return vars[kubeVar.FindStringSubmatch(ref)[1]]
			}))
		}
	}
	return hosts
}

func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func randomToken(t *testing.T) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestDeployManifests checks deploy/kubernetes: the kustomization lists
// every object but the example Secret; kustomize builds it, alone and
// under a kustomization that sets the namespace and image as
// docs/kubernetes.md shows; kubectl-validate passes every object (and
// fails one with a misspelt field); the objects hold what a deployment of
// junction must, and the pod they describe starts, passes its probes and
// serves MCP through the Service's names with the token.
func TestDeployManifests(t *testing.T) {
	tools := needK8sTools(t)
	dir := filepath.Join(repoRoot(t), "deploy", "kubernetes")

	var kust struct {
		Resources []string `yaml:"resources"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &kust); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var objects, want []string
	for _, f := range files {
		base := filepath.Base(f)
		if base == "kustomization.yaml" {
			continue
		}
		objects = append(objects, f)
		if !strings.HasSuffix(base, ".example.yaml") {
			want = append(want, base)
		}
	}
	slices.Sort(kust.Resources)
	if !slices.Equal(kust.Resources, want) {
		t.Errorf("kustomization.yaml lists %q; the folder has %q (besides *.example.yaml)", kust.Resources, want)
	}
	kubeValidate(t, tools.validate, objects...)

	// The validator is not a formality: a misspelt field fails.
	dep := mustRead(t, filepath.Join(dir, "deployment.yaml"))
	bad := filepath.Join(t.TempDir(), "deployment.yaml")
	if err := os.WriteFile(bad, bytes.Replace(dep, []byte("readOnlyRootFilesystem:"), []byte("readOnlyRootFileSystem:"), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := runTool(t, tools.validate, "--version", k8sSchemaVersion, bad); err == nil || !strings.Contains(err.Error(), "readOnlyRootFileSystem") {
		t.Errorf("kubectl-validate on a Deployment with a misspelt field: %v; want a failure naming the field", err)
	}

	// kubectl apply -k deploy/kubernetes applies what kustomize builds.
	built := kustomizeBuild(t, tools, dir)
	d := readDeployment(t, built)
	c := d.Deployment.Spec.Template.Spec.Containers[0]
	if c.Image != "junction:dev" {
		t.Errorf("image %q, want junction:dev", c.Image)
	}
	if d.Service.Spec.SessionAffinity != "ClientIP" {
		t.Errorf("Service: sessionAffinity %q; without a shared store older clients' sessions need ClientIP", d.Service.Spec.SessionAffinity)
	}

	// A kustomization of the operator's own, as docs/kubernetes.md has it.
	own := filepath.Join(t.TempDir(), "hub")
	if err := os.MkdirAll(own, 0o700); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(own, dir)
	if err != nil {
		t.Fatal(err)
	}
	overlay := fmt.Sprintf("namespace: tools\nresources: [%s]\nimages: [{name: junction, newName: registry.example.com/junction, newTag: v0.1.0}]\n", rel)
	if err := os.WriteFile(filepath.Join(own, "kustomization.yaml"), []byte(overlay), 0o600); err != nil {
		t.Fatal(err)
	}
	ownObjs := kustomizeBuild(t, tools, own)
	for _, o := range ownObjs {
		var m struct {
			Metadata struct {
				Namespace string `yaml:"namespace"`
			} `yaml:"metadata"`
		}
		if err := o.node.Decode(&m); err != nil || m.Metadata.Namespace != "tools" {
			t.Errorf("%s %s: namespace %q (%v), want tools", o.Kind, o.Name, m.Metadata.Namespace, err)
		}
	}
	if img := readDeployment(t, ownObjs).Deployment.Spec.Template.Spec.Containers[0].Image; img != "registry.example.com/junction:v0.1.0" {
		t.Errorf("image %q under the operator's kustomization, want registry.example.com/junction:v0.1.0", img)
	}

	// The commented store lines, uncommented, make valid objects and a
	// valid config.
	var withStore strings.Builder
	for _, f := range []struct{ name, commented string }{
		{"configmap.yaml", "    # store: ${JUNCTION_STORE_URL}\n"},
		{"deployment.yaml", "            # - name: JUNCTION_STORE_URL\n            #   valueFrom:\n            #     secretKeyRef:\n            #       name: junction-store\n            #       key: url\n"},
	} {
		b := string(mustRead(t, filepath.Join(dir, f.name)))
		if !strings.Contains(b, f.commented) {
			t.Fatalf("%s: the commented store lines are not there as docs/kubernetes.md describes them:\n%s", f.name, f.commented)
		}
		withStore.WriteString(strings.Replace(b, f.commented, strings.ReplaceAll(f.commented, "# ", ""), 1) + "\n---\n")
	}
	storeObjs := validObjects(t, tools, "with the store", withStore.String())
	var storeDep k8sDeployment
	var storeCM k8sConfigMap
	only(t, storeObjs, "Deployment", &storeDep)
	only(t, storeObjs, "ConfigMap", &storeCM)
	if ref := storeDep.Spec.Template.Spec.Containers[0].secretEnv("JUNCTION_STORE_URL"); ref == nil || ref.Name != "junction-store" || ref.Key != "url" {
		t.Errorf("with the store: JUNCTION_STORE_URL from %+v, want Secret junction-store key url", ref)
	}
	checkConfigMap(t, storeCM, "JUNCTION_STORE_URL="+storeURL)

	const namespace = "tools"
	token := randomToken(t)
	ref := c.secretEnv("JUNCTION_TOKEN")
	p := runPod(t, d, namespace, map[string]map[string]string{ref.Name: {ref.Key: token}})
	hosts := allowedHosts(c, map[string]string{"POD_NAMESPACE": namespace})
	for _, h := range []string{"junction", "junction.tools.svc", "junction.tools.svc.cluster.local"} {
		if !slices.Contains(hosts, h) {
			t.Errorf("the Service name %s is not an allowed Host (have %q)", h, hosts)
		}
	}
	probePod(t, p, c, token, hosts)
}

// kustomizeBuild runs kustomize build on dir, validates its output with
// kubectl-validate and returns its objects.
func kustomizeBuild(t *testing.T, tools k8sTools, dir string) []object {
	t.Helper()
	out, err := runTool(t, tools.kustomize, "build", dir)
	if err != nil {
		t.Fatalf("kustomize build:\n%v", err)
	}
	return validObjects(t, tools, "kustomize build "+filepath.Base(dir), out)
}

// validObjects validates the objects of a tool's output with
// kubectl-validate and returns them; what names the output in messages.
func validObjects(t *testing.T, tools k8sTools, what, out string) []object {
	t.Helper()
	f := filepath.Join(t.TempDir(), "objects.yaml")
	if err := os.WriteFile(f, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	kubeValidate(t, tools.validate, f)
	return parseObjects(t, what, []byte(out))
}

// TestDeployHelmChart checks deploy/helm/junction: helm lint passes; helm
// template with the default values gives objects kubectl-validate passes,
// holding what a deployment of junction must, whose pod starts, passes
// its probes and serves MCP with the token; the store, a token given as a
// value and extra Host names render as documented (and validate); and
// missing or misspelt values fail with a message that names them.
func TestDeployHelmChart(t *testing.T) {
	tools := needK8sTools(t)
	helm := tools.helm
	chart := filepath.Join(repoRoot(t), "deploy", "helm", "junction")

	var meta struct {
		KubeVersion string `yaml:"kubeVersion"`
	}
	if err := yaml.Unmarshal(mustRead(t, filepath.Join(chart, "Chart.yaml")), &meta); err != nil {
		t.Fatalf("Chart.yaml: %v", err)
	}
	if want := ">=" + k8sOldestVersion + ".0-0"; meta.KubeVersion != want {
		t.Errorf("Chart.yaml: kubeVersion %q; the objects are validated from Kubernetes %s on (%q)", meta.KubeVersion, k8sOldestVersion, want)
	}

	if out, err := runTool(t, helm, "lint", "--strict", chart); err != nil {
		t.Fatalf("helm lint:\n%v", err)
	} else {
		t.Logf("helm lint:\n%s", out)
	}

	render := func(t *testing.T, args ...string) []object {
		t.Helper()
		out, err := runTool(t, helm, append([]string{"template", "hub", chart, "--namespace", "tools"}, args...)...)
		if err != nil {
			t.Fatalf("helm template:\n%v", err)
		}
		return validObjects(t, tools, "helm template", out)
	}

	t.Run("defaults", func(t *testing.T) {
		objs := render(t)
		d := readDeployment(t, objs)
		for _, o := range objs {
			if o.Kind == "Secret" {
				t.Errorf("the default values make a Secret %s; the token Secret is made by the operator", o.Name)
			}
		}
		c := d.Deployment.Spec.Template.Spec.Containers[0]
		ref := c.secretEnv("JUNCTION_TOKEN")
		if ref.Name != "junction-token" || ref.Key != "token" {
			t.Errorf("JUNCTION_TOKEN from Secret %s key %s; the default is junction-token, key token", ref.Name, ref.Key)
		}
		if c.Image != "junction:dev" {
			t.Errorf("image %q, want junction:dev (the chart's appVersion)", c.Image)
		}
		if d.Service.Spec.SessionAffinity != "ClientIP" {
			t.Errorf("Service: sessionAffinity %q; without a shared store older clients' sessions need ClientIP", d.Service.Spec.SessionAffinity)
		}
		// The same pod as the manifests', but for the names.
		manifests := readDeployment(t, kustomizeBuild(t, tools, filepath.Join(repoRoot(t), "deploy", "kubernetes")))
		if diff := cmp.Diff(samePod(manifests), samePod(d)); diff != "" {
			t.Errorf("the chart's pod differs from the manifests' (-manifests +chart):\n%s", diff)
		}

		token := randomToken(t)
		p := runPod(t, d, "tools", map[string]map[string]string{ref.Name: {ref.Key: token}})
		hosts := allowedHosts(c, nil)
		for _, h := range []string{"hub-junction", "hub-junction.tools.svc", "hub-junction.tools.svc.cluster.local"} {
			if !slices.Contains(hosts, h) {
				t.Errorf("the Service name %s is not an allowed Host (have %q)", h, hosts)
			}
		}
		probePod(t, p, c, token, hosts)
		helmTestPod(t, objs, d, p, token)
	})

	t.Run("values", func(t *testing.T) {
		objs := render(t,
			"--set", "replicaCount=3", "--set", "image.repository=registry.example.com/junction", "--set", "image.tag=v0.1.0",
			"--set", "token.existingSecret=", "--set", "token.value=s3cret",
			"--set", "store.existingSecret=junction-store",
			"--set", "allowedHosts[0]=hub.example.com",
			"--set", "podDisruptionBudget.maxUnavailable=2", "--set", "service.sessionAffinity=None")
		d := readDeployment(t, objs)
		c := d.Deployment.Spec.Template.Spec.Containers[0]
		if d.Deployment.Spec.Replicas != 3 || c.Image != "registry.example.com/junction:v0.1.0" || d.PDB.Spec.MaxUnavailable != 2 {
			t.Errorf("replicas %d, image %s, maxUnavailable %d; want 3, registry.example.com/junction:v0.1.0, 2", d.Deployment.Spec.Replicas, c.Image, d.PDB.Spec.MaxUnavailable)
		}
		if d.Service.Spec.SessionAffinity != "None" {
			t.Errorf("Service: sessionAffinity %q, want None", d.Service.Spec.SessionAffinity)
		}
		var secret k8sSecret
		only(t, objs, "Secret", &secret)
		ref := c.secretEnv("JUNCTION_TOKEN")
		if got, _ := base64.StdEncoding.DecodeString(secret.Data[ref.Key]); ref.Name != secret.Metadata.Name || string(got) != "s3cret" {
			t.Errorf("token: JUNCTION_TOKEN from %s/%s; the chart's Secret %s holds %q", ref.Name, ref.Key, secret.Metadata.Name, got)
		}
		if ref := c.secretEnv("JUNCTION_STORE_URL"); ref == nil || ref.Name != "junction-store" || ref.Key != "url" {
			t.Errorf("store: JUNCTION_STORE_URL from %+v, want Secret junction-store key url", ref)
		}
		var cfg struct {
			Store string `yaml:"store"`
			HTTP  struct {
				AllowedHosts []string `yaml:"allowed_hosts"`
			} `yaml:"http"`
		}
		if err := yaml.Unmarshal([]byte(d.ConfigMap.Data["junction.yaml"]), &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg.Store != "${JUNCTION_STORE_URL}" || !slices.Equal(cfg.HTTP.AllowedHosts, []string{"hub.example.com"}) {
			t.Errorf("config: store %q, allowed_hosts %q; want ${JUNCTION_STORE_URL} and [hub.example.com]", cfg.Store, cfg.HTTP.AllowedHosts)
		}
		checkConfigMap(t, d.ConfigMap, "JUNCTION_STORE_URL="+storeURL)
	})

	t.Run("values of kubernetes.md", func(t *testing.T) {
		// The values file docs/kubernetes.md shows renders, validates, and
		// gives a config that config check passes.
		doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "kubernetes.md"))
		if err != nil {
			t.Fatal(err)
		}
		const start = "```yaml\n# values.yaml of a Helm release\n"
		_, rest, ok := strings.Cut(string(doc), start)
		values, _, ok2 := strings.Cut(rest, "```")
		if !ok || !ok2 {
			t.Fatalf("docs/kubernetes.md has no block starting %q", start)
		}
		file := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(file, []byte(values), 0o600); err != nil {
			t.Fatal(err)
		}
		d := readDeployment(t, render(t, "--values", file))
		c := d.Deployment.Spec.Template.Spec.Containers[0]
		if ref := c.secretEnv("GITHUB_TOKEN"); ref == nil || ref.Name != "github" || ref.Key != "token" {
			t.Errorf("GITHUB_TOKEN from %+v, want Secret github key token", ref)
		}
		checkConfigMap(t, d.ConfigMap, "GITHUB_TOKEN=ghp_example")
	})

	t.Run("bad values", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--set", "token.existingSecret="}, "token.existingSecret"},
			{[]string{"--set", "replicas=3"}, "replicas"},
			{[]string{"--set", "service.port=70000"}, "port"},
		} {
			_, err := runTool(t, helm, append([]string{"template", "hub", chart}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("helm template %q: %v; want a failure naming %s", tc.args, err, tc.want)
			}
		}
	})
}
