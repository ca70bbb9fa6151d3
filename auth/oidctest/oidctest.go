// Package oidctest is an OpenID Connect provider for tests, in the test's
// process on loopback: discovery, a key set, an authorization endpoint that
// signs in whoever the test says without a form, and a token endpoint that
// checks the client's secret, the code's redirect URI and its PKCE
// verifier, and returns an ID token signed with ES256. Nothing here is fit
// for anything but tests.
package oidctest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Issuer is a running test provider.
type Issuer struct {
	URL                    string
	ClientID, ClientSecret string

	key *ecdsa.PrivateKey
	srv *httptest.Server

	mu     sync.Mutex
	claims map[string]any
	mutate func(map[string]any)
	codes  map[string]grant
	// Tokens counts the codes exchanged.
	tokens int
}

type grant struct {
	clientID, redirect, nonce, challenge string
	claims                               map[string]any
}

// Start starts a provider for t, stopped when t ends. The next sign-in is
// "alice@example.com", verified, until SignInAs says otherwise.
func Start(t testing.TB, clientID, clientSecret string) *Issuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	i := &Issuer{ClientID: clientID, ClientSecret: clientSecret, key: key, codes: map[string]grant{},
		claims: map[string]any{"sub": "1001", "email": "alice@example.com", "email_verified": true}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", i.discovery)
	mux.HandleFunc("GET /keys", i.keys)
	mux.HandleFunc("GET /authorize", i.authorize)
	mux.HandleFunc("POST /token", i.token)
	i.srv = httptest.NewServer(mux)
	i.URL = i.srv.URL
	t.Cleanup(i.srv.Close)
	return i
}

// SignInAs sets the claims of the next sign-ins (sub, email, groups, ...);
// iss, aud, exp, iat and nonce are added.
func (i *Issuer) SignInAs(claims map[string]any) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.claims = maps.Clone(claims)
}

// Mutate changes every ID token's claims just before signing, after the
// standard ones are set: a wrong nonce, an expiry in the past.
func (i *Issuer) Mutate(fn func(claims map[string]any)) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.mutate = fn
}

// Exchanged is how many codes were traded for tokens.
func (i *Issuer) Exchanged() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.tokens
}

func (i *Issuer) discovery(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, map[string]any{
		"issuer":                                i.URL,
		"authorization_endpoint":                i.URL + "/authorize",
		"token_endpoint":                        i.URL + "/token",
		"jwks_uri":                              i.URL + "/keys",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"ES256"},
		"code_challenge_methods_supported":      []string{"S256"},
	})
}

func (i *Issuer) keys(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &i.key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
}

// authorize signs in the configured claims at once and sends the browser
// back with a code.
func (i *Issuer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("response_type") != "code" || q.Get("client_id") != i.ClientID || q.Get("redirect_uri") == "" ||
		q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("state") == "" {
		http.Error(w, "bad authorization request: "+r.URL.RawQuery, http.StatusBadRequest)
		return
	}
	code := randomString()
	i.mu.Lock()
	i.codes[code] = grant{clientID: q.Get("client_id"), redirect: q.Get("redirect_uri"), nonce: q.Get("nonce"),
		challenge: q.Get("code_challenge"), claims: maps.Clone(i.claims)}
	i.mu.Unlock()
	back, err := url.Parse(q.Get("redirect_uri"))
	if err != nil {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	bq := back.Query()
	bq.Set("code", code)
	bq.Set("state", q.Get("state"))
	back.RawQuery = bq.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (i *Issuer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, 400, map[string]string{"error": "invalid_request"})
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != i.ClientID || secret != i.ClientSecret {
		writeJSON(w, 401, map[string]string{"error": "invalid_client"})
		return
	}
	i.mu.Lock()
	g, found := i.codes[r.PostForm.Get("code")]
	delete(i.codes, r.PostForm.Get("code")) // a code is good once
	mutate := i.mutate
	i.mu.Unlock()
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	switch {
	case !found || r.PostForm.Get("grant_type") != "authorization_code":
		writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "unknown or used code"})
		return
	case r.PostForm.Get("redirect_uri") != g.redirect:
		writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "redirect_uri differs"})
		return
	case base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
		writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "PKCE verifier does not match"})
		return
	}
	claims := maps.Clone(g.claims)
	now := time.Now()
	claims["iss"], claims["aud"], claims["iat"], claims["exp"] = i.URL, g.clientID, now.Unix(), now.Add(time.Hour).Unix()
	if g.nonce != "" {
		claims["nonce"] = g.nonce
	}
	if mutate != nil {
		mutate(claims)
	}
	i.mu.Lock()
	i.tokens++
	i.mu.Unlock()
	writeJSON(w, 200, map[string]any{"access_token": randomString(), "token_type": "Bearer", "expires_in": 3600, "id_token": i.Sign(claims)})
}

// Sign returns claims as an ID token signed with the provider's key.
func (i *Issuer) Sign(claims map[string]any) string {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: i.key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	if err != nil {
		panic(err)
	}
	b, _ := json.Marshal(claims)
	obj, err := signer.Sign(b)
	if err != nil {
		panic(err)
	}
	s, err := obj.CompactSerialize()
	if err != nil {
		panic(err)
	}
	return s
}

func randomString() string {
	b := make([]byte, 16)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
