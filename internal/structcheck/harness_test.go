// The harness of the structured-output checks: a model and a serving engine, the grammar
// Vocab of the model's tokenizer, schemas compiled once (the engine's not-implemented error is
// a skip while issue 16's grammar engine is being written), an independent validator
// (santhosh-tekuri/jsonschema), and a runner that adds many requests at once and collects them.

package structcheck

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/grammar"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/tokenizer"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// openBundle loads the model at path for the test's lifetime.
func openBundle(t testing.TB, path string) *loader.Bundle {
	t.Helper()
	b, err := loader.Open(path, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// newEngine starts an engine sized for many short concurrent requests; it shuts down at the
// end of the test.
func newEngine(t testing.TB, b *loader.Bundle, maxSeqs int) *engine.Engine {
	t.Helper()
	o := engine.DefaultOptions()
	o.Scheduler.MaxNumSeqs = maxSeqs
	o.Scheduler.NumBlocks = 8192
	o.Scheduler.MaxNumBatchedTokens = 2048
	o.Scheduler.MaxModelLenTokens = 1024
	e, err := engine.New(b.Model, b.Tok, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return e
}

// vocabOf is the grammar's view of tok: every token's bytes (none for control tokens) and the
// end-of-generation ids.
func vocabOf(tok *tokenizer.Tokenizer) *grammar.Vocab {
	return grammar.VocabFrom(tok, 0)
}

// notYet reports whether err is the grammar package's "not implemented yet" (issue 16 is being
// written): the checks skip rather than fail on it.
func notYet(err error) bool {
	return err != nil && strings.Contains(err.Error(), "not implemented")
}

// compileSchema turns a JSON Schema into a Grammar (compact JSON, as the server asks for).
func compileSchema(schema string) (*grammar.Grammar, error) {
	ir, err := grammar.JSONSchema([]byte(schema), grammar.SchemaOptions{})
	if err != nil {
		return nil, err
	}
	return grammar.Compile(ir, grammar.Limits{})
}

// validator compiles schema with the independent validator, asserting formats (email, date,
// uuid...) as well as the structural keywords. Drafts: the schema's $schema, else 2020-12.
func validator(name, schema string) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	url := "mem://" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// validate checks one output against s: it must be one JSON text that s accepts.
func validate(s *jsonschema.Schema, out string) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(out)))
	if err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	return s.Validate(v)
}

// result is one finished request.
type result struct {
	text    string
	tokens  int
	finish  string
	err     error
	elapsed time.Duration
}

// runAll adds every request at once (the engine batches them) and waits for all.
func runAll(t testing.TB, e *engine.Engine, reqs []engine.Request) []result {
	t.Helper()
	out := make([]result, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		ch, err := e.Add(context.Background(), r)
		if err != nil {
			t.Fatalf("add %s: %v", r.ID, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			var sb strings.Builder
			for o := range ch {
				sb.WriteString(o.Text)
				out[i].tokens += len(o.TokenIDs)
				if o.Finished {
					out[i].finish, out[i].err = o.FinishReason, o.Err
				}
			}
			out[i].text, out[i].elapsed = sb.String(), time.Since(t0)
		}()
	}
	wg.Wait()
	return out
}
