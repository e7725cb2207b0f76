package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Fetch GETs base+path and decodes its JSON into v; key, when set, goes as a Bearer token.
// The caller bounds it with ctx (the router and up scrape with a short timeout).
func Fetch(ctx context.Context, c *http.Client, base, path, key string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("GET %s%s: %s", base, path, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(v)
}
