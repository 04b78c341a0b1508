package diode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/junction-mcp/junction/internal/files"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Log preview limits of the original.
const (
	LogPreviewMax      = 2 << 20 // bytes of log_content
	logAttempts        = 6
	logRetryDelay      = 400 * time.Millisecond
	logAttemptTimeout  = 45 * time.Second
	deployContentType  = "application/gzip"
	deployTargetScheme = "diode://"
)

// DeployInput is the input of diode_deploy.
type DeployInput struct {
	DeployToken string `json:"deploy_token,omitempty"`
	PackagePath string `json:"package_path"`
}

// DeployOutput is the result of diode_deploy.
type DeployOutput struct {
	StatusCode    int    `json:"status_code,omitempty"`
	Message       string `json:"message,omitempty"`
	RemotePath    string `json:"remote_path,omitempty"`
	LocalPath     string `json:"local_path,omitempty"`
	LogPeerHost   string `json:"log_peer_host,omitempty"`
	LogPort       int    `json:"log_port,omitempty"`
	LogRemotePath string `json:"log_remote_path,omitempty"`
	LogStatusCode int    `json:"log_status_code,omitempty"`
	LogContent    string `json:"log_content,omitempty"`
	LogTruncated  bool   `json:"log_truncated,omitempty"`
	LogMessage    string `json:"log_message,omitempty"`
}

var uuidRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
})

// NormalizeUUID trims and lower-cases a UUID, or reports why it is not one.
func NormalizeUUID(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", errors.New("empty UUID")
	}
	if !uuidRE().MatchString(s) {
		return "", errors.New("invalid UUID format")
	}
	return strings.ToLower(s), nil
}

// ParseDeployTarget parses DIODE_MCP_DEPLOY_TARGET (diode://<host>:<port>).
func ParseDeployTarget(v string) (host string, port int, err error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", 0, errors.New("DIODE_MCP_DEPLOY_TARGET is not set: configure diode://<host>.diode:<port> (or .diode.link) for the deploy files listener")
	}
	if !strings.HasPrefix(strings.ToLower(v), deployTargetScheme) {
		return "", 0, fmt.Errorf("DIODE_MCP_DEPLOY_TARGET must start with diode:// (got %q)", v)
	}
	rest := v[len(deployTargetScheme):]
	if rest == "" {
		return "", 0, errors.New("DIODE_MCP_DEPLOY_TARGET: missing host after diode://")
	}
	i := strings.LastIndex(rest, ":")
	if i < 0 {
		return "", 0, errors.New("DIODE_MCP_DEPLOY_TARGET: missing :port (expected diode://<host>:<port>)")
	}
	host, ps := rest[:i], rest[i+1:]
	if host == "" || ps == "" {
		return "", 0, errors.New("DIODE_MCP_DEPLOY_TARGET: empty host or port")
	}
	port, err = strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("DIODE_MCP_DEPLOY_TARGET: invalid port %q", ps)
	}
	return host, port, nil
}

// resolveToken applies the original's token rules; fromEnv reports that
// the token came from DIODE_MCP_DEPLOY_UUID.
func resolveToken(envUUID, token string) (uuid string, fromEnv bool, err error) {
	if strings.TrimSpace(envUUID) != "" {
		env, err := NormalizeUUID(envUUID)
		if err != nil {
			return "", false, fmt.Errorf("DIODE_MCP_DEPLOY_UUID: %v", err)
		}
		if strings.TrimSpace(token) != "" {
			tok, err := NormalizeUUID(token)
			if err != nil {
				return "", false, fmt.Errorf("deploy_token: %v", err)
			}
			if tok != env {
				return "", false, fmt.Errorf("deploy_token must match DIODE_MCP_DEPLOY_UUID or be omitted (env is %q, got %q)", env, tok)
			}
		}
		return env, true, nil
	}
	if strings.TrimSpace(token) == "" {
		return "", false, errors.New("deploy_token is required when DIODE_MCP_DEPLOY_UUID is not set")
	}
	tok, err := NormalizeUUID(token)
	if err != nil {
		return "", false, fmt.Errorf("deploy_token: %v", err)
	}
	return tok, false, nil
}

// ensureName makes the package at pkg be called <uuid>.tar.gz in its
// directory: a rename, or a copy and delete when rename fails (another
// device). It returns the final path.
func (p *pack) ensureName(pkg, uuid string) (string, error) {
	want := uuid + ".tar.gz"
	if strings.EqualFold(filepath.Base(pkg), want) {
		return pkg, nil
	}
	target := filepath.Join(filepath.Dir(pkg), want)
	if _, err := os.Lstat(target); err == nil {
		return "", fmt.Errorf("cannot rename to %q: file already exists", target)
	}
	if err := p.rename(pkg, target); err == nil {
		return target, nil
	}
	if err := copyFile(pkg, target); err != nil {
		return "", fmt.Errorf("rename tarball to %s: %v", want, err)
	}
	if err := os.Remove(pkg); err != nil {
		return "", fmt.Errorf("copied to %q but could not remove %q: %v", target, pkg, err)
	}
	return target, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(dst)
		return err
	}
	if err := out.Close(); err != nil {
		os.Remove(dst)
		return err
	}
	return nil
}

func (p *pack) deploy(ctx context.Context, req *mcp.CallToolRequest, in DeployInput) (*mcp.CallToolResult, *DeployOutput, error) {
	pkg := strings.TrimSpace(in.PackagePath)
	if pkg == "" {
		return nil, nil, errors.New("package_path is required (absolute path to the tarball)")
	}
	uuid, fromEnv, err := resolveToken(p.opts.Getenv(EnvDeployUUID), in.DeployToken)
	if err != nil {
		return nil, nil, err
	}
	if fromEnv {
		if pkg, err = p.ensureName(pkg, uuid); err != nil {
			return nil, nil, err
		}
	} else if b := strings.ToLower(filepath.Base(pkg)); b != uuid+".tar.gz" {
		return nil, nil, fmt.Errorf("package file must be named %s.tar.gz (got basename %q); set DIODE_MCP_DEPLOY_UUID for auto-rename or rename the file", uuid, filepath.Base(pkg))
	}
	host, port, err := ParseDeployTarget(p.opts.Getenv(EnvDeployTarget))
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(pkg)
	if err != nil {
		return nil, nil, fmt.Errorf("open package %q: %v", pkg, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("stat package %q: %v", pkg, err)
	}
	remote := "/" + uuid + ".tar.gz"
	u, err := files.BuildURL(host, port, remote)
	if err != nil {
		return nil, nil, err
	}
	body := &files.CountingReader{R: f, Progress: progressFunc(ctx, req, st.Size(), "uploaded")}
	res, err := p.client.Put(ctx, u, body, st.Size(), deployContentType, files.DeployTimeout)
	if err != nil {
		return nil, nil, err
	}
	out := &DeployOutput{StatusCode: res.StatusCode, Message: res.Message, RemotePath: remote, LocalPath: pkg}
	p.logPreview(ctx, host, port, "/"+uuid+".log", out)
	return nil, out, nil
}

// logPreview fills out's log_* fields. It never fails the tool.
func (p *pack) logPreview(ctx context.Context, host string, port int, remote string, out *DeployOutput) {
	out.LogPeerHost, out.LogPort, out.LogRemotePath = host, port, remote
	u, err := files.BuildURL(host, port, remote)
	if err != nil {
		out.LogMessage = "log preview: " + err.Error()
		return
	}
	for attempt := 1; attempt <= logAttempts; attempt++ {
		if attempt > 1 {
			select {
			case <-ctx.Done():
				out.LogMessage = "log preview: " + ctx.Err().Error()
				return
			case <-time.After(logRetryDelay):
			}
		}
		resp, done, err := p.client.Get(ctx, u, logAttemptTimeout)
		if err != nil {
			out.LogMessage = "log preview: " + err.Error()
			return
		}
		switch {
		case resp.StatusCode == http.StatusOK:
			b, err := io.ReadAll(io.LimitReader(resp.Body, LogPreviewMax+1))
			done()
			out.LogStatusCode = resp.StatusCode
			out.LogMessage = resp.Status
			if err != nil {
				out.LogMessage += "; read body: " + err.Error()
			}
			if len(b) > LogPreviewMax {
				b, out.LogTruncated = b[:LogPreviewMax], true
			}
			out.LogContent = string(b)
			return
		case resp.StatusCode == http.StatusNotFound && attempt < logAttempts:
			done()
			continue
		default:
			out.LogStatusCode = resp.StatusCode
			out.LogMessage = files.Snippet(resp)
			done()
			return
		}
	}
}
