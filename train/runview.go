// This file reads a run directory for the web console (`llmcloud ui RUN`, `train --ui`;
// docs/console.md): the records of log.jsonl, the run's configuration and whether it has
// finished. It reads what the trainer writes while it writes it, so a last line without its
// newline (the trainer is between its write calls) is left for the next read, not an error.
package train

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// RunView is a run directory as the console shows it (GET /console/api/run).
type RunView struct {
	Dir     string   `json:"dir"`
	Config  *Config  `json:"config"`  // the latest checkpoint's (nil before the first one)
	Records []Record `json:"records"` // log.jsonl's complete lines, in order
	// Done: the run has finished: its latest checkpoint is at its config's last step (the
	// trainer writes one at the end, after the last record) and log.jsonl has not changed
	// since (a resumed run rewrites it when it starts). A run stopped early (Ctrl-C) is not
	// done.
	Done bool `json:"done"`
}

// CheckRunDir reports whether dir is a run directory (train's --out): a directory holding
// log.jsonl, a latest checkpoint pointer or ckpt/. The error names what is missing.
func CheckRunDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("run directory: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("run directory %s is not a directory", dir)
	}
	for _, name := range []string{logFile, latestFile, "ckpt"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%s is not a run directory: it has no %s, %s or ckpt/ (give the directory train's --out wrote)", dir, logFile, latestFile)
}

// ReadRun reads the run directory dir. A directory not written yet reads as an empty run (the
// trainer creates it on its first step); a complete line of log.jsonl that is not a record is
// an error naming the line.
func ReadRun(dir string) (RunView, error) {
	v := RunView{Dir: dir, Records: []Record{}}
	raw, err := os.ReadFile(filepath.Join(dir, logFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return v, fmt.Errorf("train: %w", err)
	}
	if i := bytes.LastIndexByte(raw, '\n'); i >= 0 {
		raw = raw[:i+1] // what follows the last newline is still being written
	} else {
		raw = nil
	}
	for n, line := range bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			return v, fmt.Errorf("train: %s line %d: %w", filepath.Join(dir, logFile), n+1, err)
		}
		v.Records = append(v.Records, r)
	}
	ck, err := ResolveCheckpoint("auto", dir)
	if err != nil || ck == "" {
		return v, nil // no checkpoint yet (or a broken pointer, which train --resume reports)
	}
	st, err := ReadState(ck)
	if err != nil {
		return v, nil // being replaced: the next read sees the new one
	}
	v.Config = &st.Config
	if st.Config.Steps > 0 && st.Step >= st.Config.Steps {
		ckAt, err1 := os.Stat(filepath.Join(ck, stateFile))
		logAt, err2 := os.Stat(filepath.Join(dir, logFile))
		v.Done = err1 == nil && (err2 != nil || !logAt.ModTime().After(ckAt.ModTime()))
	}
	return v, nil
}
