// This file opens Hugging Face model directories.
package loader

import "fmt"

func openHF(path string) (*Bundle, error) {
	return nil, fmt.Errorf("%s: Hugging Face directories are not supported yet", path)
}
