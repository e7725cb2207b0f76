// serve's tool-calling and reasoning flags.
package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

// The tool and reasoning flags refuse what they cannot do before anything loads.
func TestServeToolFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--enable-auto-tool-choice"}, "--enable-auto-tool-choice needs --tool-call-parser"},
		{[]string{"--tool-call-parser", "pythonic"}, `unknown tool-call parser "pythonic" (known: hermes, llama3_json, mistral)`},
		{[]string{"--reasoning-parser", "granite"}, `unknown reasoning parser "granite" (known: deepseek_r1, qwen3)`},
	} {
		err := serve(context.Background(), append([]string{"--port", "0", "no-such-model"}, c.args...), io.Discard, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
