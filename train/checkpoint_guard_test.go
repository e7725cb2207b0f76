// Tests of what a resume refuses: a "latest" file naming a path outside the run directory,
// trainer.json fields out of range, and checkpoint files whose bytes changed.
package train

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLatestOutsideRunRefused(t *testing.T) {
	run := t.TempDir()
	for _, bad := range []string{"../../../../etc", "ckpt/../../x", "/etc", "ckpt/a/b", "..", "ckpt/..", "", "a\\..\\b"} {
		os.WriteFile(filepath.Join(run, latestFile), []byte(bad+"\n"), 0o644)
		_, err := ResolveCheckpoint("latest", run)
		if err == nil || !strings.Contains(err.Error(), "not a checkpoint directory inside the run directory") {
			t.Errorf("latest %q: %v", bad, err)
		}
	}
	for _, good := range []string{"ckpt/step-00000010", "step-00000010"} {
		os.WriteFile(filepath.Join(run, latestFile), []byte(good+"\n"), 0o644)
		dir, err := ResolveCheckpoint("latest", run)
		if err != nil || dir != filepath.Join(run, good) {
			t.Errorf("latest %q: %q, %v", good, dir, err)
		}
	}
}

func TestStateFieldsValidated(t *testing.T) {
	run := t.TempDir()
	tr := newTrainer(t, tinyConfig(prepare(t, kibText, ""), run))
	saved, err := tr.Save()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(saved, stateFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadState(saved); err != nil {
		t.Fatalf("good state refused: %v", err)
	}
	for _, c := range []struct{ from, to, want string }{
		{`"step": 0`, `"step": -5`, "step = -5"},
		{`"tokens": 0`, `"tokens": -1`, "tokens = -1"},
		{`"loader_position": `, `"loader_position": -7, "x": `, "loader_position = -7"},
		{`"adam_step": 0`, `"adam_step": 3`, "adam_step 3"},
		{`"batch": 2`, `"batch": 0`, "--batch = 0"},
		{`"rng": "`, `"rng": "", "y": "`, "rng is empty"},
	} {
		bad := strings.Replace(string(raw), c.from, c.to, 1)
		if bad == string(raw) {
			t.Fatalf("%q not in trainer.json:\n%s", c.from, raw)
		}
		os.WriteFile(filepath.Join(saved, stateFile), []byte(bad), 0o644)
		rehash(t, saved) // a consistent but hand-edited checkpoint: the checksums pass
		_, err := ReadState(saved)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), stateFile) {
			t.Errorf("%s: %v", c.to, err)
		}
		if _, err := LoadCheckpoint(saved); err == nil {
			t.Errorf("%s: LoadCheckpoint accepted it", c.to)
		}
	}
}

// rehash rewrites dir's manifest for the files it lists.
func rehash(t *testing.T, dir string) {
	t.Helper()
	m, err := readManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range m.Files {
		names = append(names, n)
	}
	if err := writeManifest(dir, names); err != nil {
		t.Fatal(err)
	}
}

// One flipped bit in any file of a checkpoint refuses it, naming the file; the manifest's
// absence refuses it too.
func TestFlippedBitRefused(t *testing.T) {
	run := t.TempDir()
	tr := newTrainer(t, tinyConfig(prepare(t, kibText, ""), run))
	saved, err := tr.Save()
	if err != nil {
		t.Fatal(err)
	}
	m, err := readManifest(saved)
	if err != nil || len(m.Files) < 2 {
		t.Fatalf("manifest %+v, %v", m, err)
	}
	if _, err := LoadCheckpoint(saved); err != nil {
		t.Fatal(err)
	}
	for name := range m.Files {
		path := filepath.Join(saved, name)
		orig, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		flipped := append([]byte(nil), orig...)
		flipped[len(flipped)*2/3] ^= 0x10
		os.WriteFile(path, flipped, 0o644)
		_, err = LoadCheckpoint(saved)
		if err == nil || !strings.Contains(err.Error(), name+" is damaged") {
			t.Errorf("%s with a flipped bit: %v", name, err)
		}
		os.WriteFile(path, orig, 0o644)
	}
	if _, err := LoadCheckpoint(saved); err != nil {
		t.Fatalf("restored: %v", err)
	}
	// A flipped bit in one of the manifest's own digests names the manifest.
	mpath := filepath.Join(saved, manifestFile)
	orig, _ := os.ReadFile(mpath)
	var anyDigest string
	for _, d := range m.Files {
		anyDigest = d
		break
	}
	at := strings.Index(string(orig), anyDigest) + 7
	flipped := append([]byte(nil), orig...)
	flipped[at] ^= 0x01
	os.WriteFile(mpath, flipped, 0o644)
	if _, err := LoadCheckpoint(saved); err == nil || !strings.Contains(err.Error(), manifestFile+" is damaged") {
		t.Errorf("manifest with a flipped bit: %v", err)
	}
	os.WriteFile(mpath, orig, 0o644)
	os.Remove(filepath.Join(saved, manifestFile))
	if _, err := LoadCheckpoint(saved); err == nil || !strings.Contains(err.Error(), manifestFile) {
		t.Errorf("no manifest: %v", err)
	}
}

// A checkpoint name that is a symbolic link out of the run directory is refused too.
func TestLatestSymlinkOutsideRefused(t *testing.T) {
	run, elsewhere := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(run, "ckpt"), 0o755)
	if err := os.Symlink(elsewhere, filepath.Join(run, "ckpt", "step-00000001")); err != nil {
		t.Skip(err)
	}
	os.WriteFile(filepath.Join(run, latestFile), []byte("ckpt/step-00000001\n"), 0o644)
	if _, err := ResolveCheckpoint("latest", run); err == nil || !strings.Contains(err.Error(), "outside the run directory") {
		t.Errorf("symlink out: %v", err)
	}
}
