// This file implements OpenData: the train and val splits of a directory prepared by
// `llmcloud data prepare`, as the loaders of one run.
package train

import (
	"errors"
	"fmt"

	"github.com/llmcloud/llmcloud/data"
)

// OpenData opens dir's splits with B×T batches. The val split is optional (Val is nil when it
// is empty). close releases the memory maps.
func OpenData(dir string, B, T int) (d Data, close func() error, err error) {
	if dir == "" {
		return Data{}, nil, errors.New("train: no --data directory")
	}
	tr, err := data.Open(dir, "train")
	if err != nil {
		return Data{}, nil, fmt.Errorf("train: %w", err)
	}
	closers := []func() error{tr.Close}
	closeAll := func() error {
		var errs []error
		for _, c := range closers {
			errs = append(errs, c())
		}
		return errors.Join(errs...)
	}
	trl, err := data.NewLoader(tr, B, T, 0, 1)
	if err != nil {
		closeAll()
		return Data{}, nil, fmt.Errorf("train: %w", err)
	}
	d = Data{Train: trl, Vocab: tr.VocabSize(), TokenizerPath: tr.TokenizerPath()}
	if va, err := data.Open(dir, "val"); err == nil {
		closers = append(closers, va.Close)
		if val, err := data.NewLoader(va, B, T, 0, 1); err == nil {
			d.Val = val
		}
	}
	return d, closeAll, nil
}
