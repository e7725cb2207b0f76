// Test helpers: a byte-level tokenizer (the 256 bytes and <|endoftext|> as BOS/EOS) and data
// sets prepared from text with data.Prepare, the same path `llmcloud data prepare` takes.
package train

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/data"
	"github.com/llmcloud/llmcloud/format/hfdir"
	"github.com/llmcloud/llmcloud/tokenizer"
)

// byteTokenizer writes dir/tokenizer.json (+ tokenizer_config.json) of a 257-token byte-level
// vocabulary and returns the directory.
func byteTokenizer(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	v := &tokenizer.Vocab{Model: "gpt2", Pre: "gpt-2", BOS: -1, EOS: -1, UNK: -1, PAD: -1, EOT: -1}
	for b := range 256 {
		v.Tokens = append(v.Tokens, string(tokenizer.ByteLevelRune(byte(b))))
		v.Types = append(v.Types, tokenizer.TypeNormal)
	}
	v.BOS, v.EOS = 256, 256
	v.Tokens = append(v.Tokens, "<|endoftext|>")
	v.Types = append(v.Types, tokenizer.TypeControl)
	js, err := tokenizer.MarshalHFJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := hfdir.WriteTokenizerConfig(filepath.Join(dir, "tokenizer_config.json"), tokenizer.HFConfig(v, "", 0)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// prepare tokenizes train (and val, if not "") into a fresh data directory.
func prepare(t *testing.T, train, val string) string {
	t.Helper()
	tmp := t.TempDir()
	in := filepath.Join(tmp, "train.txt")
	os.WriteFile(in, []byte(train), 0o644)
	o := data.PrepareOptions{Tokenizer: byteTokenizer(t), Input: in, OutDir: filepath.Join(tmp, "data")}
	if val != "" {
		o.ValInput = filepath.Join(tmp, "val.txt")
		os.WriteFile(o.ValInput, []byte(val), 0o644)
	}
	if _, err := data.Prepare(o); err != nil {
		t.Fatal(err)
	}
	return o.OutDir
}

// kibText is 1 KiB of English prose, one paragraph.
var kibText = func() string {
	s := strings.Join([]string{
		"The ferry left the harbour a little after six, while the fog still lay on the water and",
		"the gulls kept close to the pier. Most of the passengers stayed below, drinking coffee",
		"from paper cups and reading yesterday's papers, but a boy in a red coat stood at the",
		"rail and counted the buoys as they slid past. His grandmother had told him there were",
		"twelve between the town and the island, and he meant to see whether she was right. At",
		"the seventh buoy the engine slowed, and a voice on the speaker said that the crossing",
		"would take longer than usual because of the weather. Nobody seemed to mind. The boy",
		"kept counting. When the fog thinned he could see the lighthouse, white against a grey",
		"sky, and the long low shape of the island behind it. He counted the last buoy, the",
		"twelfth, just as the ferry turned towards the landing stage, and he ran below to tell",
		"his grandmother that she had been right all along. She only smiled and said that she",
		"had made the crossing every summer for fifty years and had never once lost count of",
		"anything that mattered to her, least of all the buoys, the gulls, or the grandchildren.",
	}, " ")
	return s[:1024]
}()
