package telemetry

import (
	"maps"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadConfig(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
		want Config // compared on URL, Headers, ServiceName, Sampler, SamplerArg, Content
		err  string
	}{
		{name: "off by default", env: nil,
			want: Config{ServiceName: "adaptbot", Sampler: "parentbased_always_on"}},
		{name: "base endpoint gets the signal's path", env: map[string]string{EnvEndpoint: "http://collector:4318"},
			want: Config{URL: "http://collector:4318/v1/traces", ServiceName: "adaptbot", Sampler: "parentbased_always_on"}},
		{name: "base endpoint with a path", env: map[string]string{EnvEndpoint: "https://cloud.langfuse.com/api/public/otel/"},
			want: Config{URL: "https://cloud.langfuse.com/api/public/otel/v1/traces", ServiceName: "adaptbot", Sampler: "parentbased_always_on"}},
		{name: "the traces endpoint is used as is and wins", env: map[string]string{EnvEndpoint: "http://a:4318", EnvTracesEndpoint: "http://b:6006/v1/traces"},
			want: Config{URL: "http://b:6006/v1/traces", ServiceName: "adaptbot", Sampler: "parentbased_always_on"}},
		{name: "a traces endpoint without a path is the root", env: map[string]string{EnvTracesEndpoint: "http://b:4318"},
			want: Config{URL: "http://b:4318/", ServiceName: "adaptbot", Sampler: "parentbased_always_on"}},
		{name: "headers keep base64 padding and decode percent escapes",
			env: map[string]string{EnvEndpoint: "http://c:4318", EnvHeaders: "Authorization=Basic%20cGs6c2s=, x-team = tools"},
			want: Config{URL: "http://c:4318/v1/traces", Headers: map[string]string{"Authorization": "Basic cGs6c2s=", "x-team": "tools"},
				ServiceName: "adaptbot", Sampler: "parentbased_always_on"}},
		{name: "the service name: OTEL_SERVICE_NAME over the resource's",
			env:  map[string]string{EnvResourceAttributes: "service.name=from-attrs", EnvServiceName: "bot-eu"},
			want: Config{ServiceName: "bot-eu", Sampler: "parentbased_always_on"}},
		{name: "the service name from the resource attributes",
			env:  map[string]string{EnvResourceAttributes: "service.name=from-attrs,deployment.environment=prod"},
			want: Config{ServiceName: "from-attrs", Sampler: "parentbased_always_on"}},
		{name: "a ratio sampler", env: map[string]string{EnvSampler: "ParentBased_TraceIdRatio", EnvSamplerArg: "0.25"},
			want: Config{ServiceName: "adaptbot", Sampler: "parentbased_traceidratio", SamplerArg: "0.25"}},
		{name: "disabled", env: map[string]string{EnvEndpoint: "http://c:4318", EnvDisabled: "TRUE"},
			want: Config{ServiceName: "adaptbot", Sampler: "parentbased_always_on"}},
		{name: "content on", env: map[string]string{EnvContent: "on"},
			want: Config{ServiceName: "adaptbot", Sampler: "parentbased_always_on", Content: true}},
		{name: "protobuf named", env: map[string]string{EnvProtocol: "http/protobuf"},
			want: Config{ServiceName: "adaptbot", Sampler: "parentbased_always_on"}},

		{name: "not a URL", env: map[string]string{EnvEndpoint: "collector:4318"}, err: `OTEL_EXPORTER_OTLP_ENDPOINT="collector:4318": want an http:// or https:// URL`},
		{name: "grpc", env: map[string]string{EnvProtocol: "grpc"}, err: `OTEL_EXPORTER_OTLP_PROTOCOL="grpc": AdaptBot exports over OTLP/HTTP with protobuf only`},
		{name: "bad headers, value not echoed", env: map[string]string{EnvHeaders: "Authorization Basic s3cret"}, err: "OTEL_EXPORTER_OTLP_HEADERS: want key=value pairs"},
		{name: "unknown sampler", env: map[string]string{EnvSampler: "jaeger_remote"}, err: `OTEL_TRACES_SAMPLER="jaeger_remote": use always_on`},
		{name: "ratio out of range", env: map[string]string{EnvSampler: "traceidratio", EnvSamplerArg: "2"}, err: `OTEL_TRACES_SAMPLER_ARG="2": the argument of a traceidratio sampler is a number from 0 to 1`},
		{name: "content yes", env: map[string]string{EnvContent: "yes"}, err: `ADAPTBOT_OTEL_CONTENT="yes": use on or off`},
		{name: "disabled maybe", env: map[string]string{EnvDisabled: "maybe"}, err: `OTEL_SDK_DISABLED="maybe": use true or false`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadConfig(env(tt.env))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("the error shows the headers' value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want.Headers == nil {
				tt.want.Headers = map[string]string{}
			}
			if c.URL != tt.want.URL || c.ServiceName != tt.want.ServiceName || c.Sampler != tt.want.Sampler ||
				c.SamplerArg != tt.want.SamplerArg || c.Content != tt.want.Content || !maps.Equal(c.Headers, tt.want.Headers) {
				t.Errorf("got %+v\nwant %+v", c, tt.want)
			}
			if c.On() != (tt.want.URL != "") {
				t.Errorf("On() = %v with URL %q", c.On(), c.URL)
			}
		})
	}
}

func TestLoadConfigReportsEveryProblem(t *testing.T) {
	_, err := LoadConfig(env(map[string]string{EnvEndpoint: "nope", EnvSampler: "sometimes", EnvContent: "maybe"}))
	if err == nil {
		t.Fatal("no error")
	}
	for _, name := range []string{EnvEndpoint, EnvSampler, EnvContent} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
}

func TestResourceAttributesInOrder(t *testing.T) {
	c, err := LoadConfig(env(map[string]string{EnvResourceAttributes: "b=2, a=caf%C3%A9 ,b=3"}))
	if err != nil {
		t.Fatal(err)
	}
	want := []attribute.KeyValue{attribute.String("b", "3"), attribute.String("a", "café")}
	if len(c.Resource) != len(want) || c.Resource[0] != want[0] || c.Resource[1] != want[1] {
		t.Errorf("resource %v, want %v", c.Resource, want)
	}
}

func TestConfigStringHidesSecrets(t *testing.T) {
	_, err := LoadConfig(env(map[string]string{EnvEndpoint: "https://user:pa55@collector.example:4318"}))
	if err == nil || !strings.Contains(err.Error(), "put them in OTEL_EXPORTER_OTLP_HEADERS") || strings.Contains(err.Error(), "pa55") {
		t.Errorf("credentials in the URL: %v", err)
	}
	c, err := LoadConfig(env(map[string]string{EnvEndpoint: "https://collector.example:4318", EnvHeaders: "Authorization=Bearer%20t0ken"}))
	if err != nil {
		t.Fatal(err)
	}
	if s := c.String(); strings.Contains(s, "t0ken") || !strings.Contains(s, "https://collector.example:4318/v1/traces") {
		t.Errorf("%q shows the headers, or does not say where spans go", s)
	}
	if got := (Config{}).String(); got != "off" {
		t.Errorf("off config says %q", got)
	}
}
