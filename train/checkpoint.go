// This file implements checkpoints (docs/formats/checkpoint.md): a directory holding
// trainer.json (step, token count, loader position, RNG state, AdamW step, the run's config and
// the model's shape), state.safetensors (every parameter and both AdamW moments as F32, under
// "param.", "adam_m." and "adam_v." + the GGUF tensor name), the tokenizer.json of the data
// and, written last, manifest.json with the SHA-256 of each (checkpoint_sum.go).
// A checkpoint is written into a temporary directory and renamed into place, then the run
// directory's "latest" file is replaced atomically to name it.
package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unsafe"

	"github.com/llmcloud/llmcloud/format/safetensors"
	"github.com/llmcloud/llmcloud/internal/atomicfile"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
	"github.com/llmcloud/llmcloud/train/nn"
)

// CheckpointVersion is the trainer.json format version written.
const CheckpointVersion = 1

// Files of a checkpoint directory and the pointer file of a run directory.
const (
	stateFile     = "trainer.json"
	tensorsFile   = "state.safetensors"
	tokenizerFile = "tokenizer.json"
	latestFile    = "latest"
)

// State is trainer.json.
type State struct {
	Version        int          `json:"version"`
	Step           int          `json:"step"`   // optimizer steps completed
	Tokens         int64        `json:"tokens"` // training tokens consumed
	LoaderPosition int64        `json:"loader_position"`
	LoaderEpoch    int          `json:"loader_epoch"`
	RNG            []byte       `json:"rng"` // math/rand/v2 PCG state (MarshalBinary), base64
	AdamStep       int          `json:"adam_step"`
	ElapsedSeconds float64      `json:"elapsed_seconds"` // training wall time so far
	TrainLoss      float32      `json:"train_loss"`      // loss of the last step
	Config         Config       `json:"config"`
	Model          model.Config `json:"model"`
	// Adapter is set for a fine-tuning run of low-rank adapters: the tensors are the adapters'
	// A and B matrices (and moments), not the model's.
	Adapter    bool      `json:"adapter,omitempty"`
	SpikeNorms []float64 `json:"spike_norms,omitempty"` // the loss-spike test's recent gradient norms (spike.go)
}

// Checkpoint is a loaded checkpoint: its state and its tensors (F32, by full name).
type Checkpoint struct {
	Dir           string
	State         State
	Tensors       map[string][]float32
	TokenizerPath string // "" if the checkpoint has none
}

// f32Bytes views f as bytes (little-endian machines, as the rest of the project assumes).
func f32Bytes(f []float32) []byte {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*len(f))
}

// namedF32 is one tensor to save.
type namedF32 struct {
	name  string
	shape []int
	data  []float32
}

// writeCheckpoint writes a checkpoint for st.Step under runDir/ckpt/ and points runDir/latest
// at it. It returns the checkpoint's directory.
func writeCheckpoint(runDir string, st *State, ts []namedF32, tokenizerSrc string) (string, error) {
	root := filepath.Join(runDir, "ckpt")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("train: checkpoint: %w", err)
	}
	name := fmt.Sprintf("step-%08d", st.Step)
	tmp, err := os.MkdirTemp(root, "."+name+".tmp*")
	if err != nil {
		return "", fmt.Errorf("train: checkpoint: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	js, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return "", fmt.Errorf("train: checkpoint: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(tmp, stateFile), func(w io.Writer) error {
		_, err := w.Write(append(js, '\n'))
		return err
	}); err != nil {
		return "", fmt.Errorf("train: checkpoint: %w", err)
	}
	tens := make([]tensor.Tensor, len(ts))
	for i, t := range ts {
		tens[i] = tensor.Tensor{Name: t.name, Type: tensor.F32, Shape: t.shape, Data: f32Bytes(t.data)}
	}
	meta := map[string]string{"format": "llmcloud-train-checkpoint", "version": fmt.Sprint(CheckpointVersion)}
	if err := safetensors.WriteFile(filepath.Join(tmp, tensorsFile), tens, meta); err != nil {
		return "", fmt.Errorf("train: checkpoint: %w", err)
	}
	if tokenizerSrc != "" {
		if err := copyFile(tokenizerSrc, filepath.Join(tmp, tokenizerFile)); err != nil {
			return "", fmt.Errorf("train: checkpoint: %w", err)
		}
	}
	files := []string{stateFile, tensorsFile}
	if tokenizerSrc != "" {
		files = append(files, tokenizerFile)
	}
	if err := writeManifest(tmp, files); err != nil { // last: its presence means the rest is whole
		return "", fmt.Errorf("train: checkpoint: %w", err)
	}
	if err := syncDir(tmp); err != nil {
		return "", fmt.Errorf("train: checkpoint: %w", err)
	}
	final := filepath.Join(root, name)
	if err := os.RemoveAll(final); err != nil { // a re-run of the same step replaces it
		return "", fmt.Errorf("train: checkpoint: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", fmt.Errorf("train: checkpoint: %w", err)
	}
	ok = true
	rel := filepath.Join("ckpt", name)
	if err := atomicfile.Write(filepath.Join(runDir, latestFile), func(w io.Writer) error {
		_, err := io.WriteString(w, rel+"\n")
		return err
	}); err != nil {
		return "", fmt.Errorf("train: checkpoint: %w", err)
	}
	return final, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return atomicfile.Write(dst, func(w io.Writer) error { _, err := io.Copy(w, in); return err })
}

// ResolveCheckpoint turns a --resume argument into a checkpoint directory: "latest" reads
// runDir/latest; "auto" does the same but returns "" (start fresh) when runDir has no
// checkpoint yet, for launchers that restart a run with the same command (Kubernetes, Slurm
// requeue); anything else is the checkpoint directory itself, or a run directory whose latest
// checkpoint is meant.
func ResolveCheckpoint(arg, runDir string) (string, error) {
	auto := arg == "auto"
	if arg == "latest" || auto {
		if runDir == "" {
			return "", fmt.Errorf("train: --resume %s needs --out (the run directory)", arg)
		}
		arg = runDir
	}
	if _, err := os.Stat(filepath.Join(arg, stateFile)); err == nil {
		return arg, nil
	}
	raw, err := os.ReadFile(filepath.Join(arg, latestFile))
	if auto && errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("train: %s is neither a checkpoint (no %s) nor a run directory with a checkpoint (%v)", arg, stateFile, err)
	}
	rel := strings.TrimSpace(string(raw))
	if err := checkLatest(rel); err != nil {
		return "", fmt.Errorf("train: %s: %w", filepath.Join(arg, latestFile), err)
	}
	dir := filepath.Join(arg, filepath.FromSlash(rel))
	if err := insideDir(dir, arg); err != nil {
		return "", fmt.Errorf("train: %s: %w", filepath.Join(arg, latestFile), err)
	}
	return dir, nil
}

// insideDir refuses a dir that symbolic links place outside root (a dir that does not exist
// yet is left for the reader to report).
func insideDir(dir, root string) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil
	}
	if rel, err := filepath.Rel(realRoot, real); err != nil || !filepath.IsLocal(rel) {
		return fmt.Errorf("names %s, which links to %s outside the run directory", dir, real)
	}
	return nil
}

// checkLatest accepts what a run directory's "latest" file may name: a checkpoint directory
// inside the run directory, "ckpt/<name>" as written, or a bare "<name>", where name is one
// path element (no separators, not "." or "..").
func checkLatest(rel string) error {
	name := strings.TrimPrefix(rel, "ckpt/")
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`+"\x00") ||
		strings.ContainsAny(name, "\n\r") || len(rel) > 255 {
		return fmt.Errorf("names %q, not a checkpoint directory inside the run directory (want ckpt/<name>)", rel)
	}
	return nil
}

// ReadState reads only a checkpoint's trainer.json (a launcher checks the run before starting
// its ranks without loading the tensors).
func ReadState(dir string) (*State, error) {
	if err := verifyFiles(dir, []string{stateFile}); err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, fmt.Errorf("train: checkpoint: %w", err)
	}
	var st State
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("train: checkpoint %s: %w", dir, err)
	}
	if err := st.validate(); err != nil {
		return nil, fmt.Errorf("train: checkpoint %s: %s: %w", dir, stateFile, err)
	}
	return &st, nil
}

// ResumeConfig is the configuration a resumed run starts from: the checkpoint's, except the
// settings that say how this invocation runs rather than what it computes (the parallel grid
// and its modes, activation recomputation, the collective timeout, the thread count), which start from their defaults
// so that a run resumes under any world size; flags and a config file then override as usual.
func ResumeConfig(st *State) Config {
	c, d := st.Config, DefaultConfig()
	c.DP, c.TP, c.PP, c.ZeroStage, c.MicroBatches = d.DP, d.TP, d.PP, d.ZeroStage, d.MicroBatches
	c.PPSchedule, c.BucketMB, c.TimeoutSec, c.Threads = d.PPSchedule, d.BucketMB, d.TimeoutSec, d.Threads
	c.Recompute = d.Recompute
	return c
}

// LoadCheckpoint reads a checkpoint directory and checks that its tensors are complete.
func LoadCheckpoint(dir string) (*Checkpoint, error) {
	st, err := ReadState(dir)
	if err != nil {
		return nil, err
	}
	if err := verifyFiles(dir, []string{tensorsFile}, tokenizerFile); err != nil {
		return nil, err
	}
	ck := &Checkpoint{Dir: dir, State: *st, Tensors: map[string][]float32{}}
	f, err := safetensors.Open(filepath.Join(dir, tensorsFile))
	if err != nil {
		return nil, fmt.Errorf("train: checkpoint: %w", err)
	}
	defer f.Close()
	for _, t := range f.Tensors {
		if t.Type != tensor.F32 {
			return nil, fmt.Errorf("train: checkpoint %s: tensor %s is %s, want F32", dir, t.Name, t.Type)
		}
		v := make([]float32, len(t.Data)/4)
		copy(f32Bytes(v), t.Data)
		ck.Tensors[t.Name] = v
	}
	shapes := nn.TrainedShapes(&ck.State.Model)
	if st.Adapter { // Restore checks the adapter's tensors against the model it builds
		shapes = nil
	}
	names := make([]string, 0, len(shapes))
	for n := range shapes {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		want := 1
		for _, d := range shapes[n] {
			want *= d
		}
		for _, pre := range []string{"param.", "adam_m.", "adam_v."} {
			if got := len(ck.Tensors[pre+n]); got != want {
				return nil, fmt.Errorf("train: checkpoint %s: %s%s has %d values, the model wants %d", dir, pre, n, got, want)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, tokenizerFile)); err == nil {
		ck.TokenizerPath = filepath.Join(dir, tokenizerFile)
	}
	return ck, nil
}
