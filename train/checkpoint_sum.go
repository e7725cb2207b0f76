// This file implements checkpoint checksums: manifest.json, written last into a checkpoint
// directory, holds the SHA-256 of each of its files, and a resume verifies every file against
// it, so a checkpoint with a flipped bit is refused with the damaged file named.
package train

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/llmcloud/llmcloud/internal/atomicfile"
)

const manifestFile = "manifest.json"

// manifest is manifest.json.
type manifest struct {
	Algorithm string            `json:"algorithm"` // "sha256"
	Files     map[string]string `json:"files"`     // file name -> hex digest
	// Self is the SHA-256 of Files as compact JSON (keys sorted), so a flipped bit in the
	// manifest itself names the manifest. Absent in manifests of older builds.
	Self string `json:"manifest_sha256,omitempty"`
}

// selfSum is the digest Self holds.
func (m *manifest) selfSum() string {
	js, _ := json.Marshal(m.Files)
	sum := sha256.Sum256(js)
	return hex.EncodeToString(sum[:])
}

// hashFile returns the hex SHA-256 of path, syncing it to disk first.
func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeManifest hashes the named files of dir and writes dir/manifest.json atomically.
func writeManifest(dir string, names []string) error {
	m := manifest{Algorithm: "sha256", Files: map[string]string{}}
	for _, n := range names {
		sum, err := hashFile(filepath.Join(dir, n))
		if err != nil {
			return err
		}
		m.Files[n] = sum
	}
	m.Self = m.selfSum()
	js, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, manifestFile), func(w io.Writer) error {
		_, err := w.Write(append(js, '\n'))
		return err
	})
}

// readManifest reads dir/manifest.json.
func readManifest(dir string) (*manifest, error) {
	raw, err := os.ReadFile(filepath.Join(dir, manifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("train: checkpoint %s has no %s (incomplete, or written by an older build): its files cannot be verified", dir, manifestFile)
	}
	if err != nil {
		return nil, fmt.Errorf("train: checkpoint %s: %w", dir, err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil || m.Algorithm != "sha256" || m.Files == nil {
		return nil, fmt.Errorf("train: checkpoint %s: %s is damaged (%v)", dir, manifestFile, err)
	}
	if m.Self != "" && m.Self != m.selfSum() {
		return nil, fmt.Errorf("train: checkpoint %s: %s is damaged: its own checksum does not match its contents", dir, manifestFile)
	}
	return &m, nil
}

// verifyFiles checks the named files of dir against its manifest. A name marked optional may be
// absent from the directory, but if present it must be listed and match.
func verifyFiles(dir string, required []string, optional ...string) error {
	m, err := readManifest(dir)
	if err != nil {
		return err
	}
	check := func(n string, must bool) error {
		want, listed := m.Files[n]
		if _, err := os.Stat(filepath.Join(dir, n)); errors.Is(err, fs.ErrNotExist) && !must && !listed {
			return nil
		}
		if !listed {
			return fmt.Errorf("train: checkpoint %s: %s is not in %s", dir, n, manifestFile)
		}
		got, err := hashFile(filepath.Join(dir, n))
		if err != nil {
			return fmt.Errorf("train: checkpoint %s: %w", dir, err)
		}
		if got != want {
			return fmt.Errorf("train: checkpoint %s: %s is damaged: its SHA-256 is %s, %s says %s", dir, n, got, manifestFile, want)
		}
		return nil
	}
	for _, n := range required {
		if err := check(n, true); err != nil {
			return err
		}
	}
	for _, n := range optional {
		if err := check(n, false); err != nil {
			return err
		}
	}
	return nil
}
