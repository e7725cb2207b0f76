// Package defaultmodel is llmcloud's built-in model: a small Llama trained from scratch by
// `llmcloud train` on children's stories distilled from stories260K (recipe, data and numbers
// in recipes/default/README.md), embedded
// as a Q8_0 GGUF file so that `llmcloud serve`, `generate` and `chat` work with no model
// argument on a fresh machine. The loader memory-maps models, so Path writes the embedded
// bytes once to the user's cache directory and returns that file.
package defaultmodel

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/llmcloud/llmcloud/internal/atomicfile"
)

// Name is the default model's general.name.
const Name = "llmcloud-default"

//go:embed default.gguf
var gguf []byte

// Bytes is the embedded GGUF file (read-only).
func Bytes() []byte { return gguf }

var sum = sync.OnceValue(func() [32]byte { return sha256.Sum256(gguf) })

// Path returns a file holding the default model: <cache>/llmcloud/default-<sha256 prefix>.gguf
// under os.UserCacheDir (os.TempDir when there is none), written atomically when it is missing
// or differs from the embedded bytes (checked on every call: a few milliseconds).
func Path() (string, error) { return materialize() }

func materialize() (string, error) {
	sum := sum()
	name := "default-" + hex.EncodeToString(sum[:8]) + ".gguf"
	var errs []error
	for _, dir := range cacheDirs() {
		p := filepath.Join(dir, "llmcloud", name)
		if same(p) {
			return p, nil
		}
		err := atomicfile.Write(p, func(w io.Writer) error { _, err := w.Write(gguf); return err })
		if err == nil {
			return p, nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("defaultmodel: cannot write the built-in model to a cache directory: %v", errs)
}

func cacheDirs() []string {
	var dirs []string
	if d, err := os.UserCacheDir(); err == nil {
		dirs = append(dirs, d)
	}
	return append(dirs, os.TempDir())
}

// same reports whether p already holds exactly the embedded bytes.
func same(p string) bool {
	fi, err := os.Stat(p)
	if err != nil || fi.Size() != int64(len(gguf)) {
		return false
	}
	b, err := os.ReadFile(p)
	return err == nil && bytes.Equal(b, gguf)
}
