package telemetry

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The variables Config is read from: the OpenTelemetry SDK's standard
// names, and AdaptBot's own for what the standard leaves to applications.
const (
	EnvEndpoint           = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint     = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvHeaders            = "OTEL_EXPORTER_OTLP_HEADERS"
	EnvProtocol           = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvServiceName        = "OTEL_SERVICE_NAME"
	EnvResourceAttributes = "OTEL_RESOURCE_ATTRIBUTES"
	EnvSampler            = "OTEL_TRACES_SAMPLER"
	EnvSamplerArg         = "OTEL_TRACES_SAMPLER_ARG"
	EnvDisabled           = "OTEL_SDK_DISABLED"
	EnvContent            = "ADAPTBOT_OTEL_CONTENT"
)

// DefaultServiceName is the service.name of AdaptBot's spans when neither
// OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES names one.
const DefaultServiceName = "adaptbot"

// DefaultSampler samples what the caller sampled, and every trace that
// starts here.
const DefaultSampler = "parentbased_always_on"

// Config says whether and where spans are exported. The zero Config is
// tracing off.
type Config struct {
	// URL is where spans are posted (OTLP/HTTP protobuf), resolved from
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (as is) or
	// OTEL_EXPORTER_OTLP_ENDPOINT (plus /v1/traces). Empty is off.
	URL string
	// Headers go with every export (OTEL_EXPORTER_OTLP_HEADERS): the
	// backend's credentials, usually. Never printed.
	Headers map[string]string
	// ServiceName is the resource's service.name.
	ServiceName string
	// Resource holds OTEL_RESOURCE_ATTRIBUTES, in order.
	Resource []attribute.KeyValue
	// Sampler and SamplerArg are OTEL_TRACES_SAMPLER and its argument,
	// checked; Sampler is never empty in a loaded Config.
	Sampler, SamplerArg string
	// Content attaches tool arguments and results, and model messages, to
	// spans (ADAPTBOT_OTEL_CONTENT=on). They may hold personal data, so it
	// is off by default.
	Content bool
	// Instance is the resource's service.instance.id (a cluster replica's
	// id); empty leaves it out.
	Instance string
}

// On reports whether spans are exported.
func (c Config) On() bool { return c.URL != "" }

// String says where spans go, for the startup banner: never the headers
// (the URL holds no password: LoadConfig refuses one).
func (c Config) String() string {
	if !c.On() {
		return "off"
	}
	s := fmt.Sprintf("OTLP/HTTP to %s as %s, sampler %s", c.URL, c.ServiceName, c.Sampler)
	if c.SamplerArg != "" {
		s += " " + c.SamplerArg
	}
	if c.Content {
		s += ", with tool arguments, results and model messages"
	}
	return s
}

// LoadConfig reads the configuration through getenv, never from the
// process environment, and checks every variable, reporting each bad one
// (by name, and by value unless it may hold a secret). Tracing is on when
// an endpoint is set and OTEL_SDK_DISABLED is not true.
func LoadConfig(getenv func(string) string) (Config, error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	c := Config{ServiceName: DefaultServiceName, Sampler: DefaultSampler}
	var errs []error
	bad := func(name, value, why string) {
		if value == "" {
			errs = append(errs, fmt.Errorf("%s: %s", name, why))
			return
		}
		errs = append(errs, fmt.Errorf("%s=%q: %s", name, value, why))
	}

	if v := get(EnvTracesEndpoint); v != "" {
		u, err := endpoint(v)
		if err != nil {
			bad(EnvTracesEndpoint, shown(v), err.Error())
		} else {
			if u.Path == "" {
				u.Path = "/" // the signal's URL is used as is, its root at least
			}
			c.URL = u.String()
		}
	} else if v := get(EnvEndpoint); v != "" {
		u, err := endpoint(v)
		if err != nil {
			bad(EnvEndpoint, shown(v), err.Error())
		} else {
			u.Path = path.Join("/", u.Path, "v1/traces")
			c.URL = u.String()
		}
	}
	var err error
	if c.Headers, err = parsePairs(get(EnvHeaders)); err != nil {
		bad(EnvHeaders, "", err.Error()+" (e.g. Authorization=Basic%20a2V5)")
	}
	if v := get(EnvProtocol); v != "" && v != "http/protobuf" {
		bad(EnvProtocol, v, "AdaptBot exports over OTLP/HTTP with protobuf only: use http/protobuf, and the collector's HTTP port (4318)")
	}
	if v := get(EnvResourceAttributes); v != "" {
		pairs, err := parsePairs(v)
		if err != nil {
			bad(EnvResourceAttributes, v, err.Error()+" (e.g. deployment.environment=prod,team=tools)")
		}
		for _, k := range pairKeys(v) {
			if val, ok := pairs[k]; ok {
				c.Resource = append(c.Resource, attribute.String(k, val))
			}
		}
		if name := pairs["service.name"]; name != "" {
			c.ServiceName = name
		}
	}
	if v := get(EnvServiceName); v != "" {
		c.ServiceName = v // the standard: it wins over service.name in the attributes
	}
	if v := strings.ToLower(get(EnvSampler)); v != "" {
		c.Sampler = v
	}
	c.SamplerArg = get(EnvSamplerArg)
	if _, err := sampler(c.Sampler, c.SamplerArg); errors.Is(err, errSamplerArg) {
		bad(EnvSamplerArg, c.SamplerArg, err.Error())
	} else if err != nil {
		bad(EnvSampler, c.Sampler, err.Error())
	}
	switch v := strings.ToLower(get(EnvDisabled)); v {
	case "", "false":
	case "true":
		c.URL = ""
	default:
		bad(EnvDisabled, v, "use true or false")
	}
	switch v := strings.ToLower(get(EnvContent)); v {
	case "", "off":
	case "on":
		c.Content = true
	default:
		bad(EnvContent, v, "use on or off")
	}
	return c, errors.Join(errs...)
}

// endpoint checks a collector's URL. Credentials in it are refused: the
// exporter would not send them.
func endpoint(v string) (*url.URL, error) {
	u, err := url.Parse(v)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, errors.New("want an http:// or https:// URL with a host, e.g. http://localhost:4318")
	}
	if u.User != nil {
		return nil, errors.New("credentials in the URL are not sent: put them in " + EnvHeaders + " (Authorization=Basic%20...)")
	}
	u.RawQuery, u.Fragment = "", ""
	return u, nil
}

// shown is an endpoint as an error may quote it: not at all when it may
// hold a password.
func shown(v string) string {
	if strings.Contains(v, "@") {
		return ""
	}
	return v
}

// parsePairs reads the standard's key=value list: pairs separated by
// commas, values percent-decoded, the first '=' splitting (a base64 value
// keeps its padding).
func parsePairs(s string) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	for _, p := range strings.Split(s, ",") {
		if strings.TrimSpace(p) == "" {
			continue
		}
		k, v, ok := strings.Cut(p, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, errors.New("want key=value pairs separated by commas")
		}
		dec, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("the value of %s is not percent-encoded correctly", k)
		}
		out[k] = dec
	}
	return out, nil
}

// pairKeys returns the keys of a key=value list in their order, each once.
func pairKeys(s string) []string {
	var keys []string
	seen := map[string]bool{}
	for _, p := range strings.Split(s, ",") {
		k, _, _ := strings.Cut(p, "=")
		if k = strings.TrimSpace(k); k != "" && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys
}

// errSamplerArg is a traceidratio sampler's argument out of range.
var errSamplerArg = errors.New("the argument of a traceidratio sampler is a number from 0 to 1")

// sampler builds the sampler OTEL_TRACES_SAMPLER names, as the SDK would,
// from our values rather than the process environment.
func sampler(name, arg string) (sdktrace.Sampler, error) {
	ratio := 1.0
	if strings.HasSuffix(name, "traceidratio") && arg != "" {
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return nil, errSamplerArg
		}
		ratio = r
	}
	switch name {
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "traceidratio":
		return sdktrace.TraceIDRatioBased(ratio), nil
	case "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "parentbased_traceidratio":
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio)), nil
	}
	return nil, errors.New("use always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio")
}
