package clustertest

import (
	"net"
	"sync"
	"testing"
)

// Proxy is a TCP proxy between NATS clients and a server that a test can
// cut: Stall holds every byte where it is (connections stay open, as on a
// network that has stopped delivering), Drop closes every connection and
// refuses new ones (as on a network that has gone), and Heal lets traffic
// flow again, stalled bytes first. It listens on one loopback port for its
// whole life, so clients reconnect to it.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	cond    *sync.Cond
	stalled bool
	dropped bool
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

// NewProxy proxies a free loopback port to target (host:port) until t
// ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p, err := ListenProxy("127.0.0.1:0", target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// ListenProxy proxies addr to target until Close.
func ListenProxy(addr, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is the proxy's address as a NATS URL.
func (p *Proxy) URL() string { return "nats://" + p.Addr() }

// Stall stops every byte in both directions until Heal; connections stay
// open.
func (p *Proxy) Stall() {
	p.mu.Lock()
	p.stalled = true
	p.mu.Unlock()
}

// Drop closes every connection, and refuses new ones until Heal.
func (p *Proxy) Drop() {
	p.mu.Lock()
	p.dropped = true
	for c := range p.conns {
		c.Close()
	}
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Heal lets traffic through again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.stalled, p.dropped = false, false
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.stalled = false
	p.cond.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		dropped := p.dropped
		p.mu.Unlock()
		if dropped {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, s) {
			continue
		}
		p.wg.Add(2)
		go p.pipe(c, s)
		go p.pipe(s, c)
	}
}

// track adds a connection pair, unless the proxy was cut meanwhile.
func (p *Proxy) track(c, s net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dropped {
		c.Close()
		s.Close()
		return false
	}
	p.conns[c], p.conns[s] = struct{}{}, struct{}{}
	return true
}

// pipe copies src to dst, holding each read while the proxy is stalled;
// the end of either side ends both.
func (p *Proxy) pipe(src, dst net.Conn) {
	defer p.wg.Done()
	defer func() {
		src.Close()
		dst.Close()
		p.mu.Lock()
		delete(p.conns, src)
		delete(p.conns, dst)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.stalled && !p.dropped {
				p.cond.Wait()
			}
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
