// This file lets a run train on packed sequences: a Batches that also gives each position's
// document start (DocBatches, e.g. sft.Batches) makes the model attend within each document.
package train

// DocBatches is a Batches of packed documents: DocStarts gives, after Next, each of the
// B*T positions' document start (trainexec.SetDocStarts).
type DocBatches interface {
	Batches
	DocStarts() []int32
}

// setDocs passes b's document starts of the batch just read to the model (nothing for a
// Batches that is not a DocBatches). A distributed run gives each rank its rows of the batch.
func (t *Trainer) setDocs(b Batches) error {
	d, ok := b.(DocBatches)
	if !ok {
		return nil
	}
	return t.Net.SetDocStarts(t.par.myRows(d.DocStarts(), t.Cfg.Seq), t.par.rows, t.Cfg.Seq)
}
