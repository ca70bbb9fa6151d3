package egresstest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RequireRadicale is the variable that makes a missing Radicale a failure
// rather than a skip (.ci/run sets it; so does CI=true).
const RequireRadicale = "ADAPTBOT_REQUIRE_RADICALE"

// CalendarHost is the host name of the Radicale server, in its
// certificate; Resolver maps it to 127.0.0.1.
const CalendarHost = "cal.example.com"

// Radicale is a Radicale server a test started: its users are those it
// was started with, each allowed their own collections alone (rights
// owner_only), and it stops when the test ends.
type Radicale struct {
	// Host is CalendarHost; Port the loopback port it listens on.
	Host string
	Port int
	// Roots trust its certificate.
	Roots *x509.CertPool
	// Dir is the test's folder that holds its configuration, users,
	// certificate, storage and log.
	Dir string

	users  map[string]string
	client *http.Client
	cmd    *exec.Cmd
	exited chan struct{}
	log    *lockedBuffer
}

// lockedBuffer is the server's output, written by exec's copier and read
// by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// FindRadicale returns the path of the radicale program, or skips t (fails
// it where CI=true or ADAPTBOT_REQUIRE_RADICALE=1) when there is none.
func FindRadicale(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("radicale"); err == nil {
		return p
	}
	if os.Getenv(RequireRadicale) == "1" || os.Getenv("CI") == "true" {
		t.Fatalf("Radicale is required (CI=true or %s=1) but not installed: apt-get install radicale", RequireRadicale)
	}
	t.Skip("Radicale is not installed (apt-get install radicale); .ci/run installs it")
	return ""
}

// StartRadicale starts Radicale on a free loopback port with users (name →
// password), TLS for CalendarHost and its storage in a folder of t's, waits
// until it answers, and stops it when t ends. It skips or fails t as
// FindRadicale does when the program is missing.
func StartRadicale(t testing.TB, users map[string]string) *Radicale {
	t.Helper()
	bin := FindRadicale(t)
	cert, err := NewCertificate(CalendarHost)
	if err != nil {
		t.Fatal(err)
	}
	r := &Radicale{Host: CalendarHost, Roots: cert.Roots, Dir: t.TempDir(), users: users}
	r.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: cert.Roots, MinVersion: tls.VersionTLS12},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			_, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			var d net.Dialer
			return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
		},
	}}
	t.Cleanup(r.client.CloseIdleConnections)
	var lines []string
	for name, pw := range users {
		if strings.ContainsAny(name+pw, ":\n") {
			t.Fatalf("radicale user %q: no colon or line break in a name or password", name)
		}
		lines = append(lines, name+":"+pw)
	}
	sort.Strings(lines)
	files := map[string][]byte{
		"users":    []byte(strings.Join(lines, "\n") + "\n"),
		"cert.pem": cert.CertPEM,
		"key.pem":  cert.KeyPEM,
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(r.Dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A port taken between choosing and binding makes Radicale exit: try
	// another.
	for try := 1; ; try++ {
		err := r.start(bin)
		if err == nil {
			break
		}
		if try == 3 {
			t.Fatalf("radicale did not start: %v\n%s", err, r.logText())
		}
	}
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Errorf("radicale: %v\n%s", err, r.logText())
		}
	})
	return r
}

// start runs the server on a free port and waits for it to answer.
func (r *Radicale) start(bin string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	r.Port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	config := fmt.Sprintf(`[server]
hosts = 127.0.0.1:%d
ssl = True
certificate = %[2]s/cert.pem
key = %[2]s/key.pem

[auth]
type = htpasswd
htpasswd_filename = %[2]s/users
htpasswd_encryption = plain
delay = 0

[rights]
type = owner_only

[storage]
filesystem_folder = %[2]s/collections

[web]
type = none

[logging]
level = warning
mask_passwords = True
`, r.Port, r.Dir)
	path := filepath.Join(r.Dir, "config")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		return err
	}
	r.log = &lockedBuffer{}
	r.cmd = exec.Command(bin, "--config", path)
	// Its own environment: none of the test's, no RADICALE_CONFIG, a home
	// in the test's folder.
	r.cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + r.Dir, "LANG=C.UTF-8"}
	r.cmd.Dir = r.Dir
	r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
	if err := r.cmd.Start(); err != nil {
		return err
	}
	r.exited = make(chan struct{})
	go func() {
		r.cmd.Wait() //nolint:errcheck // the exit is read from ProcessState
		close(r.exited)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case <-r.exited:
			return fmt.Errorf("radicale exited: %v", r.cmd.ProcessState)
		default:
		}
		// Any answer over TLS will do: 401 asks for the credentials.
		if status, _, err := r.Do("", http.MethodGet, "/", nil, ""); err == nil && status > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			r.stop() //nolint:errcheck // it failed to start
			return errors.New("radicale did not answer within 20s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the server: SIGTERM, then SIGKILL after 5 s.
func (r *Radicale) stop() error {
	if r.cmd == nil || r.cmd.Process == nil {
		return nil
	}
	select {
	case <-r.exited:
		return nil
	default:
	}
	r.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited meanwhile
	select {
	case <-r.exited:
		return nil
	case <-time.After(5 * time.Second):
		r.cmd.Process.Kill() //nolint:errcheck // as above
		<-r.exited
		return errors.New("radicale did not stop on SIGTERM within 5s; killed")
	}
}

func (r *Radicale) logText() string {
	if r.log == nil {
		return ""
	}
	return r.log.String()
}

// Log is what the server has printed (warnings and errors).
func (r *Radicale) Log() string { return r.logText() }

// URL is the address of path on the server, by its host name:
// https://cal.example.com:PORT/path.
func (r *Radicale) URL(path string) string {
	return "https://" + net.JoinHostPort(r.Host, strconv.Itoa(r.Port)) + "/" + strings.TrimPrefix(path, "/")
}

// Secret is the value of user's secret for this server: their Basic
// credentials (a tool sends "Authorization: Basic {{secret:NAME}}").
func (r *Radicale) Secret(user string) string { return Basic(user, r.users[user]) }

// Do sends a request to the server as user ("" for nobody), with the
// test's own client, and returns the status and the body.
func (r *Radicale) Do(user, method, path string, header map[string]string, body string) (int, string, error) {
	req, err := http.NewRequest(method, r.URL(path), strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if user != "" {
		req.SetBasicAuth(user, r.users[user])
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("%s: %w", describe(method, req.URL.String()), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, string(b), err
}

// MakeCalendar creates the calendar name of user (/user/name/), as a
// CalDAV client would, and returns its URL.
func (r *Radicale) MakeCalendar(user, name string) (string, error) {
	path := "/" + user + "/" + name + "/"
	status, body, err := r.Do(user, "MKCALENDAR", path, nil, "")
	if err != nil {
		return "", err
	}
	if status != http.StatusCreated {
		return "", fmt.Errorf("MKCALENDAR %s as %s: status %d: %s", path, user, status, body)
	}
	return r.URL(path), nil
}

// Calendar returns the calendar at path as user reads it: the iCalendar
// text of all its events (a GET of the collection).
func (r *Radicale) Calendar(user, path string) (string, error) {
	status, body, err := r.Do(user, http.MethodGet, path, nil, "")
	if err != nil {
		return "", err
	}
	if status != http.StatusOK {
		return "", fmt.Errorf("GET %s as %s: status %d: %s", path, user, status, body)
	}
	return body, nil
}
