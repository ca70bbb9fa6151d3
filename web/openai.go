package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"adaptbot"
	"adaptbot/llm"
	"adaptbot/reqid"
)

// The OpenAI-compatible door (issue 32): POST /v1/chat/completions and GET
// /v1/models in the shapes of OpenAI's Chat Completions API, so that any
// chat client that talks to "an OpenAI-compatible server" talks to
// AdaptBot. The handlers only translate: the chat is Service.Converse, with
// the same keys, roles, limits, row and trace as every door. Errors under
// /v1 take OpenAI's shape (openAIError), whichever layer refused.

// openAIPrefix is where the door's routes live.
const openAIPrefix = "/v1/"

// openAIModel is the model name AdaptBot answers to.
const openAIModel = "adaptbot"

// openAIModels are the model ids the door lists and accepts: adaptbot, and
// adaptbot:<model> for the configured model.
func (s *Server) openAIModels() []string {
	ids := []string{openAIModel}
	if name := s.modelName(); name != "" {
		if _, model, ok := strings.Cut(name, "/"); ok && model != "" {
			name = model
		}
		ids = append(ids, openAIModel+":"+name)
	}
	return ids
}

// handleModels is GET /v1/models.
func (s *Server) handleModels() fiber.Handler {
	created := time.Now().Unix()
	return func(c *fiber.Ctx) error {
		data := []fiber.Map{}
		for _, id := range s.openAIModels() {
			data = append(data, fiber.Map{"id": id, "object": "model", "created": created, "owned_by": "adaptbot"})
		}
		return c.JSON(fiber.Map{"object": "list", "data": data})
	}
}

// completionRequest is a chat completion request. Fields AdaptBot cannot
// honour are decoded to be refused; any other field is accepted and
// ignored.
type completionRequest struct {
	Model         string          `json:"model"`
	Messages      []openAIMessage `json:"messages"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	User                string          `json:"user"`
	Tools               []openAITool    `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	N                   *int            `json:"n"`
	Logprobs            *bool           `json:"logprobs"`
	TopLogprobs         *int            `json:"top_logprobs"`
	ResponseFormat      *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	Modalities []string        `json:"modalities"`
	Audio      json.RawMessage `json:"audio"`
}

// openAIMessage is one message of a request. Content is a string, null,
// or a list of parts of which only text parts are understood.
type openAIMessage struct {
	Role       string           `json:"role"`
	Content    json.RawMessage  `json:"content"`
	ToolCalls  []openAIToolCall `json:"tool_calls,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
}

// openAIToolCall is a call of a function, in a request's assistant
// message or in an answer.
type openAIToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// openAITool is a function the client offers.
type openAITool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// functionName is what OpenAI accepts as a function's name.
var functionName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// conversation checks a request for what AdaptBot cannot honour and turns
// it into the service's Conversation.
func (s *Server) conversation(req *completionRequest) (adaptbot.Conversation, error) {
	var conv adaptbot.Conversation
	model := strings.TrimSpace(req.Model)
	switch {
	case model == "":
		return conv, paramError("model", `"model" is required: use "adaptbot" (GET /v1/models lists the models)`)
	case !s.knownModel(model):
		return conv, &adaptbot.Error{Kind: adaptbot.NotFound, Msg: fmt.Sprintf("the model %q does not exist here: use %q (GET /v1/models lists the models)", model, openAIModel),
			Extra: map[string]any{"param": "model", "code": "model_not_found"}}
	case req.N != nil && *req.N != 1:
		return conv, paramError("n", `"n" must be 1: AdaptBot gives one answer per request`)
	case req.Logprobs != nil && *req.Logprobs, req.TopLogprobs != nil && *req.TopLogprobs > 0:
		return conv, paramError("logprobs", "log probabilities are not available: AdaptBot's answer is written by several model calls and its tools")
	case req.ResponseFormat != nil && req.ResponseFormat.Type != "" && req.ResponseFormat.Type != "text":
		return conv, paramError("response_format", fmt.Sprintf("response_format %q is not supported: AdaptBot answers in text", req.ResponseFormat.Type))
	case len(req.Audio) > 0 && string(req.Audio) != "null", slicesContain(req.Modalities, "audio"):
		return conv, paramError("modalities", "audio is not supported: AdaptBot answers in text")
	}
	if t := req.Temperature; t != nil && (*t < 0 || *t > 2) {
		return conv, paramError("temperature", `"temperature" must be between 0 and 2`)
	}
	for _, p := range []struct {
		name string
		v    *int
	}{{"max_tokens", req.MaxTokens}, {"max_completion_tokens", req.MaxCompletionTokens}} {
		if p.v == nil {
			continue
		}
		if *p.v < 1 {
			return conv, paramError(p.name, fmt.Sprintf("%q must be at least 1", p.name))
		}
		conv.MaxTokens = *p.v // max_completion_tokens, the newer, wins
	}
	conv.Temperature = req.Temperature
	offerTools := true
	if len(req.ToolChoice) > 0 && string(req.ToolChoice) != "null" {
		var choice string
		if json.Unmarshal(req.ToolChoice, &choice) != nil || (choice != "auto" && choice != "none") {
			return conv, paramError("tool_choice", `"tool_choice" may be "auto" or "none": AdaptBot decides which tools to call, its own or yours`)
		}
		offerTools = choice == "auto"
	}
	seen := map[string]bool{}
	for i, t := range req.Tools {
		param := fmt.Sprintf("tools[%d]", i)
		if t.Type != "function" {
			return conv, paramError(param+".type", fmt.Sprintf(`%s.type is %q; only "function" tools are supported`, param, t.Type))
		}
		name := t.Function.Name
		if !functionName.MatchString(name) {
			return conv, paramError(param+".function.name", fmt.Sprintf("%s.function.name %q must be 1 to 64 letters, digits, _ or -", param, name))
		}
		if seen[name] {
			return conv, paramError(param+".function.name", fmt.Sprintf("%s.function.name %q is offered twice", param, name))
		}
		seen[name] = true
		params := t.Function.Parameters
		if len(params) == 0 || string(params) == "null" {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		if offerTools {
			conv.Tools = append(conv.Tools, llm.Function{Name: name, Description: t.Function.Description, Parameters: params})
		}
	}
	for i, m := range req.Messages {
		text, err := messageText(m.Content, i)
		if err != nil {
			return conv, err
		}
		role := llm.Role(m.Role)
		if m.Role == "developer" {
			role = llm.System // the newer name of the system role
		}
		msg := llm.Message{Role: role, Content: text, CallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			args := strings.TrimSpace(tc.Function.Arguments)
			if args == "" {
				args = "{}"
			}
			msg.Calls = append(msg.Calls, llm.FunctionCall{ID: tc.ID, Name: tc.Function.Name, Arguments: json.RawMessage(args)})
		}
		conv.Messages = append(conv.Messages, msg)
	}
	if n := len(conv.Messages); n > 0 {
		if last := conv.Messages[n-1]; last.Role == llm.User && len(last.Content) > s.opts.Limits.MaxMessage {
			return conv, &apiError{Status: fiber.StatusRequestEntityTooLarge,
				Msg: fmt.Sprintf("the last message is %d bytes; the limit is %d (ADAPTBOT_MAX_MESSAGE): shorten it or send it in parts", len(last.Content), s.opts.Limits.MaxMessage)}
		}
	}
	return conv, nil
}

// knownModel reports whether model is one of openAIModels.
func (s *Server) knownModel(model string) bool {
	return slicesContain(s.openAIModels(), model)
}

func slicesContain(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// messageText is a message's content as text: a string, null, or the text
// of its text parts.
func messageText(raw json.RawMessage, i int) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	param := fmt.Sprintf("messages[%d].content", i)
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", paramError(param, param+" must be a string or a list of text parts")
	}
	var b strings.Builder
	for j, p := range parts {
		if p.Type != "text" {
			return "", paramError(fmt.Sprintf("%s[%d].type", param, j), fmt.Sprintf("%s[%d] is a %q part; AdaptBot reads text only", param, j, p.Type))
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// paramError is a 400 about one field of the request.
func paramError(param, msg string) error {
	return &adaptbot.Error{Kind: adaptbot.Invalid, Msg: msg, Extra: map[string]any{"param": param}}
}

// handleCompletions is POST /v1/chat/completions: one JSON answer, or with
// "stream": true chat.completion.chunk events ending with [DONE].
func (s *Server) handleCompletions() fiber.Handler {
	return func(c *fiber.Ctx) error {
		var req completionRequest
		if err := decodeJSON(c.Body(), &req, false); err != nil {
			return err
		}
		conv, err := s.conversation(&req)
		if err != nil {
			return err
		}
		ctx := c.UserContext()
		id := reqid.From(ctx) // the door's (X-Request-Id)
		if id == "" {
			id = reqid.New()
			ctx = reqid.With(ctx, id)
		}
		enc := completionEncoder{id: id, model: req.Model, created: time.Now().Unix()}
		// The operation's own refusals come before any chunk, with their
		// row and a status of their own, even when streaming was asked.
		chat, err := s.svc.PrepareConverse(ctx, conv)
		if err != nil {
			return err
		}
		if !req.Stream {
			res, err := chat.Run(ctx, adaptbot.Stream{})
			if err != nil {
				return err
			}
			return c.JSON(enc.completion(res))
		}
		includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
		s.openAIStream(c, ctx, enc, includeUsage, chat)
		return nil
	}
}

// openAIStream answers with chat.completion.chunk events as the answer is
// written, then the calls of the client's tools, the finish, the usage if
// asked for, and [DONE]. A failure after the first event goes as an error
// event in OpenAI's shape. Like streamEvents, it runs after the handler has
// returned, under the request's values but its own cancellation.
func (s *Server) openAIStream(c *fiber.Ctx, ctx context.Context, enc completionEncoder, includeUsage bool, chat adaptbot.Prepared[*adaptbot.ChatResult]) {
	openStream(c, ctx, func(ctx context.Context, write func(frame []byte)) {
		send := func(v any) {
			data, err := json.Marshal(v)
			if err != nil {
				s.log.Error("openai chunk not encoded", "err", err)
				return
			}
			write(dataFrame(data))
		}
		send(enc.chunk(fiber.Map{"role": "assistant", "content": ""}, nil))
		// A piece of text is the chunk most sent: its frame is made once.
		head, _ := json.Marshal(enc.chunk(fiber.Map{"content": ""}, nil))
		before, after, _ := bytes.Cut(dataFrame(head), []byte(`""`))
		text := func(text string) {
			piece, _ := json.Marshal(text)
			write(append(append(append(make([]byte, 0, len(before)+len(piece)+len(after)), before...), piece...), after...))
		}
		res, err := chat.Run(ctx, adaptbot.Stream{Text: text})
		if err != nil {
			status, _, body := errorBody(err, s.log)
			send(openAIError(status, body))
			return
		}
		if calls := enc.calls(res.Calls, true); len(calls) > 0 {
			send(enc.chunk(fiber.Map{"tool_calls": calls}, nil))
		}
		send(enc.chunk(fiber.Map{}, finishReason(res)))
		if includeUsage {
			send(fiber.Map{"id": enc.id, "object": "chat.completion.chunk", "created": enc.created, "model": enc.model,
				"choices": []any{}, "usage": completionUsage(res)})
		}
		write([]byte("data: [DONE]\n\n"))
	})
}

// completionEncoder writes a request's answers in OpenAI's shapes.
type completionEncoder struct {
	id      string
	model   string
	created int64
}

// completion is the whole answer.
func (e completionEncoder) completion(res *adaptbot.ChatResult) fiber.Map {
	msg := fiber.Map{"role": "assistant", "content": res.Response}
	if calls := e.calls(res.Calls, false); len(calls) > 0 {
		msg["tool_calls"] = calls
		if res.Response == "" {
			msg["content"] = nil
		}
	}
	return fiber.Map{
		"id": e.id, "object": "chat.completion", "created": e.created, "model": e.model,
		"choices": []fiber.Map{{"index": 0, "message": msg, "finish_reason": finishReason(res), "logprobs": nil}},
		"usage":   completionUsage(res),
		// What AdaptBot did, for clients that look: the trace is
		// GET /api/requests/<id>.
		"adaptbot": fiber.Map{"request_id": res.RequestID, "path": res.Path, "tools": res.Tools},
	}
}

// chunk is one streamed event with delta and, at the end, finish.
func (e completionEncoder) chunk(delta fiber.Map, finish any) fiber.Map {
	return fiber.Map{"id": e.id, "object": "chat.completion.chunk", "created": e.created, "model": e.model,
		"choices": []fiber.Map{{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}}}
}

// calls are the calls of the client's tools, indexed when streamed.
func (e completionEncoder) calls(calls []llm.FunctionCall, indexed bool) []openAIToolCall {
	var out []openAIToolCall
	for i, call := range calls {
		tc := openAIToolCall{ID: call.ID, Type: "function"}
		if indexed {
			tc.Index = &i
		}
		tc.Function.Name, tc.Function.Arguments = call.Name, string(call.Arguments)
		if tc.Function.Arguments == "" {
			tc.Function.Arguments = "{}"
		}
		out = append(out, tc)
	}
	return out
}

func finishReason(res *adaptbot.ChatResult) string {
	if len(res.Calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

// completionUsage is the answer's tokens: every model call the request made.
func completionUsage(res *adaptbot.ChatResult) fiber.Map {
	u := res.Usage
	return fiber.Map{"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens, "total_tokens": u.PromptTokens + u.CompletionTokens}
}

// openAIError is an error in OpenAI's shape, {"error": {"message", "type",
// "param", "code"}}, made from errorBody's status and body. The request ID,
// when there is one, rides along.
func openAIError(status int, body fiber.Map) fiber.Map {
	msg, _ := body["error"].(string)
	var param, code any
	if p, ok := body["param"].(string); ok {
		param = p
	}
	typ := "invalid_request_error"
	switch {
	case status == fiber.StatusUnauthorized:
		typ, code = "authentication_error", "invalid_api_key"
	case status == fiber.StatusForbidden:
		typ, code = "permission_error", "forbidden"
	case status == fiber.StatusNotFound:
		typ, code = "not_found_error", "not_found"
	case status == fiber.StatusTooManyRequests:
		typ, code = "rate_limit_error", "rate_limit_exceeded"
	case status >= 500:
		typ = "server_error"
	}
	if k, ok := body["error_kind"].(adaptbot.Kind); ok && code == nil {
		code = string(k)
	}
	if c, ok := body["code"].(string); ok {
		code = c
	}
	e := fiber.Map{"message": msg, "type": typ, "param": param, "code": code}
	if id, ok := body["request_id"].(string); ok {
		e["request_id"] = id
	}
	return fiber.Map{"error": e}
}

// dataFrame is one unnamed Server-Sent Event carrying data, as OpenAI's
// stream sends each chunk.
func dataFrame(data []byte) []byte {
	return append(append(append(make([]byte, 0, len(data)+8), "data: "...), data...), "\n\n"...)
}
