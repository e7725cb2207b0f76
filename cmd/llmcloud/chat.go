// The chat command: an interactive conversation in the terminal. Each turn renders the whole
// conversation through the model's own chat template (Jinja, as Hugging Face renders it) and
// streams the reply.
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/llmcloud/llmcloud/chattmpl"
	"github.com/llmcloud/llmcloud/generate"
	"github.com/llmcloud/llmcloud/loader"
)

func init() {
	register("chat", "interactive chat with a model through its chat template", func(args []string, stdout, stderr io.Writer) error {
		return runChat(args, os.Stdin, stdout, stderr)
	})
}

func runChat(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("chat", stderr)
	var mf modelFlags
	var sf samplingFlags
	mf.register(fs)
	sf.register(fs)
	system := fs.String("system", "", "system prompt")
	tmplFile := fs.String("chat-template", "", "Jinja chat template file to use instead of the model's")
	if _, err := parseInterleaved(fs, args); err != nil {
		return err
	}
	if err := mf.useDefault(textLog(stderr)); err != nil {
		return err
	}
	b, err := mf.open()
	if err != nil {
		return err
	}
	defer b.Close()
	tmpl := b.ChatTemplate
	if *tmplFile != "" {
		src, err := os.ReadFile(*tmplFile)
		if err != nil {
			return err
		}
		tmpl = string(src)
	}
	if tmpl == "" {
		fmt.Fprintln(stderr, "note: the model has no chat template (a base model, not tuned for chat: it continues text rather than answering); using a plain \"User:/Assistant:\" transcript")
		tmpl = chattmpl.PlainTranscript
		if len(sf.stops) == 0 {
			sf.stops = stringList{"\nUser:"}
		}
	}
	if _, err := chattmpl.Parse(tmpl); err != nil {
		return fmt.Errorf("chat template: %w", err)
	}
	var messages []any
	if *system != "" {
		messages = append(messages, message("system", *system))
	}
	params := sf.params(fs, b.Defaults)
	fmt.Fprintf(stderr, "chatting with %s (temperature %g, top-p %g)\n", b.Name, params.Temperature, params.TopP)
	fmt.Fprintln(stderr, chatQuitHelp)
	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for {
		fmt.Fprint(stderr, "> ")
		if !in.Scan() {
			fmt.Fprintln(stderr)
			return in.Err()
		}
		line := strings.TrimSpace(in.Text())
		if line == "" {
			continue
		}
		if line == "/exit" || line == "/quit" {
			return nil
		}
		messages = append(messages, message("user", line))
		prompt, err := renderChat(b, tmpl, messages)
		if err != nil {
			return err
		}
		ids := b.Tok.Encode(prompt, false, true)
		ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
		res, err := generate.Run(ctx, b.Model, b.Tok, ids, generate.Options{
			MaxTokens: sf.maxTokens, Sample: params, Stop: sf.stops, IgnoreEOS: sf.ignoreEOS,
		}, func(s string) { fmt.Fprint(stdout, s) })
		cancel()
		fmt.Fprintln(stdout)
		if err != nil && ctx.Err() == nil {
			return err
		}
		messages = append(messages, message("assistant", strings.TrimSpace(res.Text)))
		params.Seed++ // a new draw each turn, still reproducible for a given --seed
	}
}

// chatQuitHelp is the banner line that says how to leave: /exit, /quit or end of input end the
// chat; Ctrl-C stops only the reply being generated.
const chatQuitHelp = "type /exit or /quit, or press Ctrl-D, to quit; Ctrl-C stops a reply"

func message(role, content string) *chattmpl.Map {
	m := chattmpl.NewMap()
	m.Set("role", role)
	m.Set("content", content)
	return m
}

// renderChat renders messages with the generation prompt, passing the tokenizer's BOS and EOS
// texts as bos_token and eos_token.
func renderChat(b *loader.Bundle, tmpl string, messages []any) (string, error) {
	var bos, eos string
	v := b.Tok.Vocab()
	if v.BOS >= 0 && v.BOS < len(v.Tokens) {
		bos = v.Tokens[v.BOS]
	}
	if v.EOS >= 0 && v.EOS < len(v.Tokens) {
		eos = v.Tokens[v.EOS]
	}
	return chattmpl.Apply(tmpl, messages, chattmpl.Options{AddGenerationPrompt: true, BOSToken: bos, EOSToken: eos})
}
