// This file generates the demonstration dataset of fine-tuning: short instructions whose
// answers can be checked exactly (arithmetic, word reversal, lookup in a given text, formatting
// as JSON), as JSONL lines in the messages format with a "task" field, split into a training
// and a held-out test set that share no prompt.
package sft

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Tasks are the generated tasks' names.
var Tasks = []string{"arithmetic", "reverse", "lookup", "json"}

// TaskExample is one generated example.
type TaskExample struct {
	Task     string    `json:"task"`
	Messages []Message `json:"messages"`
}

var (
	taskNames   = []string{"Tom", "Mia", "Sam", "Lily", "Ben", "Anna", "Max", "Lucy", "Tim", "Sue", "Jack", "Emma"}
	taskColors  = []string{"red", "blue", "green", "yellow", "pink", "black", "white", "brown"}
	taskThings  = []string{"ball", "hat", "cat", "dog", "box", "cup", "kite", "bike", "book", "car"}
	taskWords   = []string{"sun", "tree", "bird", "fish", "moon", "cake", "frog", "star", "boat", "milk", "bear", "duck", "rain", "door", "shoe", "bell"}
	taskSystems = "You answer with the answer only."
)

// genTask makes one example of task from r.
func genTask(r *rand.Rand, task string) (user, answer string) {
	switch task {
	case "arithmetic":
		a, b := r.IntN(50), r.IntN(50)
		if r.IntN(2) == 0 {
			return fmt.Sprintf("What is %d + %d?", a, b), fmt.Sprint(a + b)
		}
		a, b = max(a, b), min(a, b)
		return fmt.Sprintf("What is %d - %d?", a, b), fmt.Sprint(a - b)
	case "reverse":
		n := 3 + r.IntN(2)
		ws := make([]string, n)
		for i := range ws {
			ws[i] = taskWords[r.IntN(len(taskWords))]
		}
		rev := make([]string, n)
		for i, w := range ws {
			rev[n-1-i] = w
		}
		return "Reverse the words: " + strings.Join(ws, " "), strings.Join(rev, " ")
	case "lookup":
		p := r.Perm(len(taskNames))[:3]
		var facts []string
		colors, things := make([]string, 3), make([]string, 3)
		for i, k := range p {
			colors[i], things[i] = taskColors[r.IntN(len(taskColors))], taskThings[r.IntN(len(taskThings))]
			facts = append(facts, fmt.Sprintf("%s has a %s %s.", taskNames[k], colors[i], things[i]))
		}
		q := r.IntN(3)
		return fmt.Sprintf("%s What color is the %s of %s?", strings.Join(facts, " "), things[q], taskNames[p[q]]), colors[q]
	default: // json
		name, age, c := taskNames[r.IntN(len(taskNames))], 3+r.IntN(10), taskColors[r.IntN(len(taskColors))]
		b, _ := json.Marshal(struct {
			Name  string `json:"name"`
			Age   int    `json:"age"`
			Color string `json:"color"`
		}{name, age, c})
		return fmt.Sprintf("Write as JSON: name %s, age %d, color %s", name, age, c), string(b)
	}
}

// GenerateTasks makes nTrain training and nTest test examples of each task from seed, the
// test prompts distinct from every training prompt, tasks interleaved.
func GenerateTasks(seed uint64, nTrain, nTest int) (train, test []TaskExample) {
	r := rand.New(rand.NewPCG(seed, 0x736674)) // stream "sft"
	seen := map[string]bool{}
	make1 := func(task string, fresh bool) TaskExample {
		for {
			u, a := genTask(r, task)
			if fresh && seen[u] {
				continue
			}
			seen[u] = true
			return TaskExample{Task: task, Messages: []Message{{Role: "system", Content: taskSystems},
				{Role: "user", Content: u}, {Role: "assistant", Content: a}}}
		}
	}
	for range nTest { // test first: every test prompt is new; training prompts avoid them
		for _, t := range Tasks {
			test = append(test, make1(t, true))
		}
	}
	testSet := map[string]bool{}
	for k := range seen {
		testSet[k] = true
	}
	for range nTrain {
		for _, t := range Tasks {
			for {
				e := make1(t, false)
				if !testSet[e.Messages[1].Content] {
					train = append(train, e)
					break
				}
			}
		}
	}
	return train, test
}
