// ExampleNewLoader: writing a small split with ShardWriter and reading it as a rank of a
// data-parallel loader.
package data_test

import (
	"fmt"
	"log"
	"os"

	"github.com/llmcloud/llmcloud/data"
)

// A split of 100 tokens 0..99 read as batches of 2 sequences of 4 tokens by rank 1 of 2.
func ExampleNewLoader() {
	dir, _ := os.MkdirTemp("", "shards")
	defer os.RemoveAll(dir)
	w, _ := data.NewShardWriter(dir, "train", 4096, 60) // shards of at most 60 tokens
	ids := make([]int, 100)
	for i := range ids {
		ids[i] = i
	}
	w.Write(ids)
	shards, err := w.Close()
	if err != nil {
		log.Fatal(err)
	}
	m := &data.Meta{Format: data.FormatName, Version: data.Version, Tokenizer: "tokenizer.json",
		VocabSize: 4096, DType: data.DTypeFor(4096), BOSID: 0, EOSID: 0, Train: shards}
	if err := data.WriteMeta(dir, m); err != nil {
		log.Fatal(err)
	}

	d, err := data.Open(dir, "train")
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	l, err := data.NewLoader(d, 2, 4, 1, 2)
	if err != nil {
		log.Fatal(err)
	}
	x, y := make([]int32, 2*4), make([]int32, 2*4)
	fmt.Println(len(shards), "shards,", d.Len(), "tokens,", l.Windows(), "windows per epoch for this rank")
	for range 3 {
		l.Next(x, y)
		fmt.Println("x", x, "y", y, "epoch", l.Epoch())
	}
	// Output:
	// 2 shards, 100 tokens, 6 windows per epoch for this rank
	// x [8 9 10 11 12 13 14 15] y [9 10 11 12 13 14 15 16] epoch 0
	// x [24 25 26 27 28 29 30 31] y [25 26 27 28 29 30 31 32] epoch 0
	// x [40 41 42 43 44 45 46 47] y [41 42 43 44 45 46 47 48] epoch 0
}
