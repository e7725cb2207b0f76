package kubeapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// meta is the part of an object's metadata that Follow needs.
type meta struct {
	Metadata struct {
		Name            string `json:"name"`
		Namespace       string `json:"namespace"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
}

// list is a collection as the API returns it, its items left raw.
type list struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

// event is one line of a watch stream.
type event struct {
	Type   string          `json:"type"` // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
	Object json.RawMessage `json:"object"`
}

// Follow keeps a copy of the collection at path (e.g.
// /apis/discovery.k8s.io/v1/namespaces/NS/endpointslices, query e.g. labelSelector) as an
// informer does: it lists, then watches from the list's resourceVersion, re-watches when a
// watch ends, and lists again when the API says the version is gone or a request fails
// (with backoff, up to 30 s apart). It calls changed with every object of the collection (as
// raw JSON, in name order) after each list and after each change a watch reports. It returns
// nil when ctx is done, and an error only when the first list is refused as a bad request
// (400, e.g. a malformed label selector): that will not get better by retrying.
func (c *Client) Follow(ctx context.Context, path string, query url.Values, log *slog.Logger, changed func(items []json.RawMessage)) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	objs := map[string]json.RawMessage{}
	report := func() {
		keys := slices.Sorted(maps.Keys(objs))
		items := make([]json.RawMessage, len(keys))
		for i, k := range keys {
			items[i] = objs[k]
		}
		changed(items)
	}
	backoff := time.Duration(0)
	first := true
	for ctx.Err() == nil {
		if backoff > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
		}
		var l list
		if err := c.Get(ctx, path, query, &l); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var se *StatusError
			if first && errors.As(err, &se) && se.Code == http.StatusBadRequest {
				return err
			}
			backoff = nextBackoff(backoff)
			log.Warn("kubernetes API: list failed; retrying", "path", path, "err", err, "in", backoff)
			continue
		}
		first = false
		clear(objs)
		for _, it := range l.Items {
			var m meta
			if err := json.Unmarshal(it, &m); err != nil {
				continue
			}
			objs[m.Metadata.Namespace+"/"+m.Metadata.Name] = it
		}
		report()
		rv := l.Metadata.ResourceVersion
		// Watch from rv until the version is gone (list again) or a request fails.
		for ctx.Err() == nil {
			next, err := c.watchOnce(ctx, path, query, rv, objs, report)
			if err == nil {
				rv, backoff = next, 0
				continue
			}
			if ctx.Err() != nil {
				return nil
			}
			if IsGone(err) {
				backoff = 0
				log.Info("kubernetes API: watch version gone; listing again", "path", path)
			} else {
				backoff = nextBackoff(backoff)
				log.Warn("kubernetes API: watch failed; listing again", "path", path, "err", err, "in", backoff)
			}
			break
		}
	}
	return nil
}

func nextBackoff(d time.Duration) time.Duration {
	if d == 0 {
		return time.Second
	}
	return min(2*d, 30*time.Second)
}

// watchOnce runs one watch request from resourceVersion rv, applying its events to objs, and
// returns the last resourceVersion seen when the server ends the stream.
func (c *Client) watchOnce(ctx context.Context, path string, query url.Values, rv string,
	objs map[string]json.RawMessage, report func()) (string, error) {
	q := url.Values{}
	maps.Copy(q, query)
	q.Set("watch", "true")
	q.Set("resourceVersion", rv)
	q.Set("allowWatchBookmarks", "true")
	// The server ends the watch after this; a spread keeps many watchers from renewing at once.
	timeout := 300 + rand.IntN(300)
	q.Set("timeoutSeconds", strconv.Itoa(timeout))
	// Our own deadline a little later, in case the connection dies without a word.
	wctx, cancel := context.WithTimeout(ctx, time.Duration(timeout+30)*time.Second)
	defer cancel()
	resp, err := c.send(wctx, http.MethodGet, path, q, nil)
	if err != nil {
		return rv, err
	}
	defer resp.Body.Close()
	// Cancelling wctx closes the body and ends Decode below.
	dec := json.NewDecoder(resp.Body)
	for {
		var ev event
		if err := dec.Decode(&ev); err != nil {
			if ctx.Err() != nil {
				return rv, ctx.Err()
			}
			if errors.Is(err, io.EOF) || wctx.Err() != nil {
				return rv, nil // the server's timeout, or ours
			}
			return rv, fmt.Errorf("kubernetes API: watch %s: %w", path, err)
		}
		if ev.Type == "ERROR" {
			var st status
			_ = json.Unmarshal(ev.Object, &st)
			return rv, fmt.Errorf("kubernetes API: watch %s: %w", path, &StatusError{Code: st.Code, Reason: st.Reason, Message: st.Message})
		}
		var m meta
		if err := json.Unmarshal(ev.Object, &m); err != nil {
			return rv, fmt.Errorf("kubernetes API: watch %s: %w", path, err)
		}
		if m.Metadata.ResourceVersion != "" {
			rv = m.Metadata.ResourceVersion
		}
		key := m.Metadata.Namespace + "/" + m.Metadata.Name
		switch ev.Type {
		case "ADDED", "MODIFIED":
			objs[key] = ev.Object
			report()
		case "DELETED":
			delete(objs, key)
			report()
		}
	}
}
