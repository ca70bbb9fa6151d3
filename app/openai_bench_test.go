package main

import (
	"bytes"
	"context"
	"net"
	"testing"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"adaptbot/agent"
	"adaptbot/config"
	"adaptbot/llm"
	"adaptbot/service"
	"adaptbot/telemetry"
	"adaptbot/web"
)

// sayModel answers every call at once with the same words, streamed word
// by word when asked: what is left of a chat is AdaptBot's own work.
type sayModel struct{}

func (sayModel) Name() string { return "fake/say" }
func (sayModel) Generate(_ context.Context, r llm.Request) (llm.Response, error) {
	words := []string{"Hello! ", "I am ", "a scripted ", "model."}
	if r.Stream != nil {
		for _, w := range words {
			r.Stream(w)
		}
	}
	return llm.Response{Content: "Hello! I am a scripted model.", Usage: llm.Usage{PromptTokens: 500, CompletionTokens: 6}}, nil
}

// BenchmarkOpenAIOverChat measures what the OpenAI-compatible door adds to
// a chat: the same one-call answer through POST /chat and through POST
// /v1/chat/completions, each plain and streamed, in memory through the
// whole server (edge, service, agent, a model that answers at once; rows
// and traces dropped). The difference between each pair is the door's
// cost per request.
func BenchmarkOpenAIOverChat(b *testing.B) {
	a, err := agent.New(agent.Deps{Model: sayModel{}, Tools: instantBox{}}, agent.Config{})
	if err != nil {
		b.Fatal(err)
	}
	cfg := config.Config{Addr: "127.0.0.1:3000"}
	svc := service.New(service.Deps{Agent: a, Tools: instantBox{}, Rows: nowhere{}, Traces: nowhere{}, Metrics: telemetry.NewMetrics()})
	s := web.NewServer(svc, testAuth(b, cfg), nil, edgeOptions(cfg, nil))
	ln := fasthttputil.NewInmemoryListener()
	go s.Serve(ln)
	defer ln.Close()
	client := &fasthttp.HostClient{Addr: "127.0.0.1:3000", Dial: func(string) (net.Conn, error) { return ln.Dial() }, MaxConns: 1}
	for _, bc := range []struct {
		name, path, body string
		stream           bool
		want             string
	}{
		{"chat", "/chat", `{"message": "hello"}`, false, `"response":"Hello! I am a scripted model."`},
		{"openai", "/v1/chat/completions", `{"model": "adaptbot", "messages": [{"role": "user", "content": "hello"}]}`, false, `"content":"Hello! I am a scripted model."`},
		{"chat streamed", "/chat", `{"message": "hello"}`, true, "event: result"},
		{"openai streamed", "/v1/chat/completions", `{"model": "adaptbot", "stream": true, "stream_options": {"include_usage": true}, "messages": [{"role": "user", "content": "hello"}]}`, true, "data: [DONE]"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var req fasthttp.Request
			req.Header.SetMethod("POST")
			req.SetRequestURI(bc.path)
			req.Header.SetHost("127.0.0.1:3000")
			req.Header.SetContentType("application/json")
			if bc.stream {
				req.Header.Set("Accept", "text/event-stream")
			}
			req.SetBodyString(bc.body)
			var resp fasthttp.Response
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := client.Do(&req, &resp); err != nil {
					b.Fatal(err)
				}
				if body := resp.Body(); resp.StatusCode() != 200 || !bytes.Contains(body, []byte(bc.want)) {
					b.Fatalf("status %d: %s", resp.StatusCode(), body)
				}
			}
		})
	}
}
