package router

import (
	"math"
	"math/rand/v2"
	"sort"
)

// sparse is a matrix in compressed rows: row i holds the (column, value)
// pairs in rows[i]. It is the term-by-tool matrix that the latent semantic
// basis is computed from.
type sparse struct {
	rows [][]entry
	cols int
}

type entry struct {
	col int32
	v   float64
}

// dense is a row-major matrix of r rows and c columns.
type dense struct {
	r, c int
	a    []float64
}

func newDense(r, c int) *dense { return &dense{r: r, c: c, a: make([]float64, r*c)} }

func (m *dense) row(i int) []float64 { return m.a[i*m.c : (i+1)*m.c] }

// mul returns S·X (rows(S) × X.c); X has one row per column of S.
func (s *sparse) mul(x *dense) *dense {
	y := newDense(len(s.rows), x.c)
	for i, row := range s.rows {
		yi := y.row(i)
		for _, e := range row {
			axpy(yi, e.v, x.row(int(e.col)))
		}
	}
	return y
}

// mulT returns Sᵀ·Y (cols(S) × Y.c); Y has one row per row of S.
func (s *sparse) mulT(y *dense) *dense {
	z := newDense(s.cols, y.c)
	for i, row := range s.rows {
		yi := y.row(i)
		for _, e := range row {
			axpy(z.row(int(e.col)), e.v, yi)
		}
	}
	return z
}

// axpy adds a·x to y.
func axpy(y []float64, a float64, x []float64) {
	x = x[:len(y)]
	for j := range y {
		y[j] += a * x[j]
	}
}

// orthonormalize makes the columns of m orthonormal in place by modified
// Gram–Schmidt, done twice for accuracy ("twice is enough"), on a
// column-major copy so that every inner loop runs over contiguous memory. A
// column that is (numerically) in the span of the ones before it becomes
// zero, so a matrix of lower rank than its width is handled.
func orthonormalize(m *dense) {
	cols := make([][]float64, m.c)
	for j := range cols {
		col := make([]float64, m.r)
		for i := range col {
			col[i] = m.a[i*m.c+j]
		}
		cols[j] = col
	}
	for j, col := range cols {
		before := math.Sqrt(dot64(col, col))
		for range 2 {
			for _, prev := range cols[:j] {
				axpy(col, -dot64(col, prev), prev)
			}
		}
		n := math.Sqrt(dot64(col, col))
		scale := 0.0
		if n > 1e-10*before {
			scale = 1 / n
		}
		for i := range col {
			col[i] *= scale
		}
	}
	for j, col := range cols {
		for i, x := range col {
			m.a[i*m.c+j] = x
		}
	}
}

func dot64(a, b []float64) float64 {
	var s float64
	b = b[:len(a)]
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// gram returns Mᵀ·M (c × c).
func gram(m *dense) *dense {
	g := newDense(m.c, m.c)
	for i := 0; i < m.r; i++ {
		ri := m.row(i)
		for p, v := range ri {
			if v != 0 {
				axpy(g.row(p), v, ri)
			}
		}
	}
	return g
}

// symEigen returns the eigenvalues of the symmetric matrix g, largest first,
// and its eigenvectors as the columns of a matrix in the same order, by the
// cyclic Jacobi method (g is small: the sketch width).
func symEigen(g *dense) ([]float64, *dense) {
	n := g.c
	a := append([]float64(nil), g.a...)
	v := newDense(n, n)
	for i := range n {
		v.a[i*n+i] = 1
	}
	for sweep := 0; sweep < 50; sweep++ {
		var off, total float64
		for i := range n {
			for j := range n {
				x := a[i*n+j] * a[i*n+j]
				total += x
				if i != j {
					off += x
				}
			}
		}
		if off <= 1e-22*total {
			break
		}
		for p := 0; p < n; p++ {
			for q := p + 1; q < n; q++ {
				apq := a[p*n+q]
				if math.Abs(apq) < 1e-300 {
					continue
				}
				theta := (a[q*n+q] - a[p*n+p]) / (2 * apq)
				t := math.Copysign(1, theta) / (math.Abs(theta) + math.Sqrt(theta*theta+1))
				c := 1 / math.Sqrt(t*t+1)
				s := t * c
				for k := range n {
					akp, akq := a[k*n+p], a[k*n+q]
					a[k*n+p] = c*akp - s*akq
					a[k*n+q] = s*akp + c*akq
				}
				for k := range n {
					apk, aqk := a[p*n+k], a[q*n+k]
					a[p*n+k] = c*apk - s*aqk
					a[q*n+k] = s*apk + c*aqk
				}
				for k := range n {
					vkp, vkq := v.a[k*n+p], v.a[k*n+q]
					v.a[k*n+p] = c*vkp - s*vkq
					v.a[k*n+q] = s*vkp + c*vkq
				}
			}
		}
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return a[order[i]*n+order[i]] > a[order[j]*n+order[j]] })
	vals := make([]float64, n)
	vecs := newDense(n, n)
	for j, o := range order {
		vals[j] = a[o*n+o]
		for i := range n {
			vecs.a[i*n+j] = v.a[i*n+o]
		}
	}
	return vals, vecs
}

// svdParams are the randomized SVD's sketch settings (Halko, Martinsson and
// Tropp, "Finding structure with randomness", 2011).
const (
	svdOversample = 10 // extra sketch columns beyond the wanted rank
	svdPowerIters = 2  // subspace iterations, for a slowly decaying spectrum
)

// leftSingular returns the top k left singular vectors of a (as the columns
// of a rows(a) × k matrix) and the singular values, by a randomized range
// finder with subspace iteration. It sketches whichever side of a is smaller
// so that the Gram–Schmidt steps cost min(rows, cols)·width². The random
// sketch is drawn from a fixed seed, so equal matrices give equal bases.
func leftSingular(a *sparse, k int) (*dense, []float64) {
	m, n := len(a.rows), a.cols
	l := min(k+svdOversample, m, n)
	if l <= 0 {
		return newDense(m, 0), nil
	}
	// Work with M = A (sketching the term side) or M = Aᵀ (the tool side).
	mul, mulT, c := a.mul, a.mulT, n
	if n < m {
		mul, mulT, c = a.mulT, a.mul, m
	}
	rng := rand.New(rand.NewPCG(1, 2))
	omega := newDense(c, l)
	for i := range omega.a {
		omega.a[i] = rng.NormFloat64()
	}
	q := mul(omega)
	orthonormalize(q)
	// Orthonormalizing only the smaller side after each round trip keeps
	// the work at min(rows, cols)·width²; with few iterations in float64
	// nothing is lost to rounding that matters here.
	for range svdPowerIters {
		q = mul(mulT(q))
		orthonormalize(q)
	}
	// B = Qᵀ·M is l × c; its SVD comes from the eigenvectors W of
	// B·Bᵀ = (Mᵀ·Q)ᵀ(Mᵀ·Q). M's left singular vectors are Q·W and its
	// right ones Mᵀ·Q·W·Σ⁻¹.
	bt := mulT(q) // c × l
	vals, w := symEigen(gram(bt))
	k = min(k, l)
	sigma := make([]float64, k)
	for j := range k {
		sigma[j] = math.Sqrt(max(vals[j], 0))
	}
	side := q // rows(M) × l
	if n < m {
		side = bt // c × l, and c = m: the term side
	}
	u := newDense(m, k)
	for i := range m {
		src, dst := side.row(i), u.row(i)
		for j := range k {
			var s float64
			for p, x := range src {
				s += x * w.a[p*l+j]
			}
			dst[j] = s
		}
	}
	if n < m {
		for i := range m {
			row := u.row(i)
			for j := range k {
				if sigma[j] > 0 {
					row[j] /= sigma[j]
				} else {
					row[j] = 0
				}
			}
		}
	}
	return u, sigma
}
