// Test harness: a real server on a loopback port over a real model (stories260K from
// testdata, or a tiny random-weight model with a chat template written by synth).
package server

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/synth"
)

// testTemplate renders tools (by name) and every message, ending with "<|assistant|>".
const testTemplate = `{{ bos_token }}{% if tools %}[tools:{% for t in tools %} {{ t.function.name }}{% endfor %}]
{% endif %}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}
{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}`

// synthModel writes a tiny llama with the byte vocabulary and testTemplate into dir.
func synthModel(t testing.TB, dir string, ctxLen int) string {
	t.Helper()
	o := synth.Options{Dim: 32, Layers: 1, Heads: 2, FFN: 64, CtxLen: ctxLen, Seed: 7, Name: "tiny-chat",
		ChatTemplate: testTemplate}
	p, err := o.Plan()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tiny.gguf")
	if err := convert.Write(path, p, convert.Options{Type: "f32"}); err != nil {
		t.Fatal(err)
	}
	return path
}

type testServer struct {
	srv  *Server
	eng  *engine.Engine
	url  string // http://127.0.0.1:port
	hs   *http.Server
	bund *loader.Bundle
}

// startServer serves the model at path on 127.0.0.1; mod adjusts the options.
func startServer(t testing.TB, path string, opts Options, mod func(*engine.Options)) *testServer {
	t.Helper()
	b, err := loader.Open(path, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := New(opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: s.Handler()}
	go hs.Serve(ln)
	eo := engine.DefaultOptions()
	eo.Scheduler.NumBlocks = 512
	eo.Scheduler.MaxNumBatchedTokens = 512
	eo.OnStep = s.StepHook
	if mod != nil {
		mod(&eo)
	}
	eng, err := engine.New(b.Model, b.Tok, eo)
	if err != nil {
		t.Fatal(err)
	}
	s.Attach(b, eng)
	ts := &testServer{srv: s, eng: eng, url: "http://" + ln.Addr().String(), hs: hs, bund: b}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		hs.Shutdown(ctx)
		if err := eng.Shutdown(ctx); err != nil {
			t.Errorf("engine shutdown: %v", err)
		}
		if st := eng.Stats(); st.FreeBlocks != st.NumBlocks {
			t.Errorf("%d of %d KV blocks free after the test", st.FreeBlocks, st.NumBlocks)
		}
		b.Close()
	})
	return ts
}

func storiesPath(t testing.TB) string {
	return fixture.Path(t, "models", "stories260K", "stories260K.bin")
}
