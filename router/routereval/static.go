package routereval

import (
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"adaptbot/clip"
)

// Static is a static embedding model distilled from Universal Sentence
// Encoder lite by embedserver/distill.js (as model2vec distils a sentence
// transformer): a SentencePiece unigram vocabulary and one vector per piece.
// A text's vector is the sum of its pieces' vectors (each already weighted
// by how rare the piece is). It is a router.Embedder, so the router fuses it
// exactly as it fuses a model server's embeddings. It was measured as the
// router's built-in dense signal and did not earn its place (router/README.md).
type Static struct {
	dims   int
	pieces map[string]int32
	maxLen int       // longest piece, in bytes
	score  []float32 // log-probability of each piece
	rows   []float32 // len(score) × dims
	unk    float32   // the score of an unknown character

	mu    sync.RWMutex
	cache map[string][]int32 // a word's pieces
}

// LoadStatic reads the table at path.
func LoadStatic(path string) (*Static, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadStatic(f)
}

// ReadStatic reads a gzipped table written by distill.js: "USE1", the number
// of pieces and of dimensions (uint32 little-endian), each piece (a length
// byte, its UTF-8 bytes, its log-probability as float32), then each piece's
// row (a float32 scale and dims int8 values).
func ReadStatic(r io.Reader) (*Static, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("static embedding table: %w", err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("static embedding table: %w", err)
	}
	bad := errors.New("static embedding table: truncated or not a USE1 table")
	if len(b) < 12 || string(b[:4]) != "USE1" {
		return nil, bad
	}
	n, dims := int(binary.LittleEndian.Uint32(b[4:])), int(binary.LittleEndian.Uint32(b[8:]))
	if n <= 0 || dims <= 0 || n > 1<<20 || dims > 4096 {
		return nil, bad
	}
	s := &Static{dims: dims, pieces: make(map[string]int32, n), cache: map[string][]int32{}, score: make([]float32, n), rows: make([]float32, n*dims)}
	p := 12
	for i := range n {
		if p >= len(b) || p+1+int(b[p])+4 > len(b) {
			return nil, bad
		}
		l := int(b[p])
		piece := string(b[p+1 : p+1+l])
		s.score[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[p+1+l:]))
		p += 1 + l + 4
		// The first pieces are <unk>, <s>, </s> and spares: never matched.
		if i >= 6 {
			s.pieces[piece] = int32(i)
			s.maxLen = max(s.maxLen, l)
			s.unk = min(s.unk, s.score[i])
		}
	}
	if len(b)-p != n*(4+dims) {
		return nil, bad
	}
	for i := range n {
		scale := math.Float32frombits(binary.LittleEndian.Uint32(b[p:]))
		row := s.rows[i*dims : (i+1)*dims]
		for j := range dims {
			row[j] = scale * float32(int8(b[p+4+j]))
		}
		p += 4 + dims
	}
	// SentencePiece scores an unknown character below every piece.
	s.unk -= 10
	return s, nil
}

// Dims is the length of the model's vectors.
func (s *Static) Dims() int { return s.dims }

// EmbedDocuments embeds each text.
func (s *Static) EmbedDocuments(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = s.Embed(t)
	}
	return out, nil
}

// EmbedQuery embeds one text.
func (s *Static) EmbedQuery(_ context.Context, text string) ([]float32, error) {
	return s.Embed(text), nil
}

// maxWordLen is the longest word embedded, as the router's lexical index
// takes it: longer runs are pasted data.
const maxWordLen = 64

// maxEmbedBytes bounds the text embedded: a request's first 4 KiB say what it
// is about, and a tool's description rarely needs more.
const maxEmbedBytes = 4 << 10

// Embed returns text's vector, of length Dims and unit length (all zeros
// when no piece of text is known).
func (s *Static) Embed(text string) []float32 {
	v := make([]float32, s.dims)
	s.pieceIDs(text, func(id int32) {
		row := s.rows[int(id)*s.dims : (int(id)+1)*s.dims]
		for j, x := range row {
			v[j] += x
		}
	})
	normalize32(v)
	return v
}

// Tokenize returns the pieces text is cut into, for tests and for people.
func (s *Static) Tokenize(text string) []string {
	var out []string
	byID := make(map[int32]string, len(s.pieces))
	for p, id := range s.pieces {
		byID[id] = p
	}
	s.pieceIDs(text, func(id int32) { out = append(out, byID[id]) })
	return out
}

// pieceIDs cuts text into pieces as SentencePiece does: words separated by
// whitespace, each prefixed with "▁" and segmented by the unigram model's
// most probable split (Viterbi). A piece never spans two words, so each word
// is segmented on its own, and remembered. Words longer than maxWordLen are
// data, not language, and are skipped, as the lexical index skips them.
// Unknown characters are dropped.
func (s *Static) pieceIDs(text string, emit func(int32)) {
	if len(text) > maxEmbedBytes {
		text = clip.Prefix(text, maxEmbedBytes)
	}
	for w := range strings.FieldsFuncSeq(text, unicode.IsSpace) {
		if len(w) > maxWordLen {
			continue
		}
		for _, id := range s.word(w) {
			emit(id)
		}
	}
}

// maxCachedWords bounds the memory of segmented words.
const maxCachedWords = 1 << 16

// word returns the pieces of one word, from the cache or by segment.
func (s *Static) word(w string) []int32 {
	s.mu.RLock()
	ids, ok := s.cache[w]
	s.mu.RUnlock()
	if ok {
		return ids
	}
	ids = s.segment("▁" + w)
	s.mu.Lock()
	if len(s.cache) >= maxCachedWords {
		clear(s.cache) // crude, but words recur and segmenting is cheap
	}
	s.cache[strings.Clone(w)] = ids
	s.mu.Unlock()
	return ids
}

// segment is the unigram Viterbi over one "▁"-prefixed word.
func (s *Static) segment(w string) []int32 {
	n := len(w)
	best := make([]float32, n+1)
	from := make([]int32, n+1) // where the best piece ending here starts
	id := make([]int32, n+1)   // and its id; -1 for an unknown character
	for i := 1; i <= n; i++ {
		best[i] = float32(math.Inf(-1))
	}
	for i := 0; i < n; i++ {
		if math.IsInf(float64(best[i]), -1) || !utf8.RuneStart(w[i]) {
			continue
		}
		_, size := utf8.DecodeRuneInString(w[i:])
		if c := best[i] + s.unk; c > best[i+size] {
			best[i+size], from[i+size], id[i+size] = c, int32(i), -1
		}
		for j := i + 1; j <= min(n, i+s.maxLen); j++ {
			if p, ok := s.pieces[w[i:j]]; ok {
				if c := best[i] + s.score[p]; c > best[j] {
					best[j], from[j], id[j] = c, int32(i), p
				}
			}
		}
	}
	var rev []int32
	for j := n; j > 0; j = int(from[j]) {
		if id[j] >= 0 {
			rev = append(rev, id[j])
		}
	}
	out := make([]int32, len(rev))
	for k, x := range rev {
		out[len(rev)-1-k] = x
	}
	return out
}

// normalize32 scales v to unit length in place (a zero vector stays zero).
func normalize32(v []float32) {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(n))
	for i := range v {
		v[i] *= inv
	}
}
