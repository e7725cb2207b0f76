package ui

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

func TestPageCarriesMode(t *testing.T) {
	mux := http.NewServeMux()
	Mount(mux, Options{Mode: ModeRouter})
	code, body := get(t, mux, "/")
	if code != 200 || !strings.Contains(body, `<meta name="llmcloud-mode" content="router">`) {
		t.Fatalf("GET / = %d, mode meta missing:\n%s", code, body)
	}
	if code, _ := get(t, mux, "/ui/app.js"); code != 200 {
		t.Fatalf("GET /ui/app.js = %d", code)
	}
	if code, _ := get(t, mux, "/ui/nope.js"); code != 404 {
		t.Fatalf("GET /ui/nope.js = %d, want 404", code)
	}
}

// staticFiles returns every embedded file under static/ by its name (e.g. "app.js").
func staticFiles(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(static, p)
		files[strings.TrimPrefix(p, "static/")] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

var (
	assetRef  = regexp.MustCompile(`(?:src|href)="(/ui/[^"]+)"`)
	jsImport  = regexp.MustCompile(`(?:from|import)\s*\(?\s*['"]\./([^'"]+)['"]`)
	formField = regexp.MustCompile(`<(input|select|textarea)\b([^>]*)>`)
	idAttr    = regexp.MustCompile(`\bid="([^"]+)"`)
)

// TestAssetsServed: everything the page loads (index.html's src/href and the modules' imports)
// is embedded and served with a JavaScript or CSS content type.
func TestAssetsServed(t *testing.T) {
	files := staticFiles(t)
	h := Handler(Options{})
	want := map[string]bool{}
	for _, m := range assetRef.FindAllStringSubmatch(files["index.html"], -1) {
		want[strings.TrimPrefix(m[1], "/ui/")] = true
	}
	for name, body := range files {
		if strings.HasSuffix(name, ".js") {
			for _, m := range jsImport.FindAllStringSubmatch(body, -1) {
				want[m[1]] = true
			}
		}
	}
	for _, must := range []string{"app.js", "style.css", "api.js", "chart.js", "chat.js", "cloud.js", "bench.js", "train.js"} {
		if !want[must] {
			t.Errorf("%s is not referenced by index.html or any module", must)
		}
	}
	for name := range want {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/ui/"+name, nil))
		ct := rec.Header().Get("Content-Type")
		switch {
		case rec.Code != 200:
			t.Errorf("GET /ui/%s = %d", name, rec.Code)
		case strings.HasSuffix(name, ".js") && !strings.Contains(ct, "javascript"):
			t.Errorf("GET /ui/%s: Content-Type %q, want JavaScript (modules need it)", name, ct)
		case strings.HasSuffix(name, ".css") && !strings.HasPrefix(ct, "text/css"):
			t.Errorf("GET /ui/%s: Content-Type %q, want text/css", name, ct)
		}
	}
}

// TestNoExternalURLs: the console loads nothing from another origin (no CDN, no web fonts);
// the SVG namespace is a name, not a fetch.
func TestNoExternalURLs(t *testing.T) {
	ext := regexp.MustCompile(`(?i)https?://[^\s'"<>)]*|(?:src|href|url)\s*[=(]\s*['"]?//`)
	for name, body := range staticFiles(t) {
		for _, u := range ext.FindAllString(body, -1) {
			if u != "http://www.w3.org/2000/svg" {
				t.Errorf("%s references %q: the console must not load from another origin", name, u)
			}
		}
	}
}

// TestNoHTMLInjection: no module turns strings into markup, so model output, file names and
// replica names can only ever become text (the pages build elements with textContent).
func TestNoHTMLInjection(t *testing.T) {
	bad := regexp.MustCompile(`\.innerHTML\b|\.outerHTML\b|insertAdjacentHTML|document\.write|createContextualFragment|DOMParser|\beval\(|new Function\(`)
	inline := regexp.MustCompile(`(?i)<[a-z][^>]*\son[a-z]+\s*=|<script>`)
	for name, body := range staticFiles(t) {
		if strings.HasSuffix(name, ".js") {
			for _, m := range bad.FindAllString(body, -1) {
				t.Errorf("%s uses %s: build elements with textContent/createElement instead", name, m)
			}
		}
		if strings.HasSuffix(name, ".html") {
			for _, m := range inline.FindAllString(body, -1) {
				t.Errorf("%s has inline script %q: scripts live in modules", name, m)
			}
		}
	}
}

// TestControlsLabelled: every form field in index.html has an id with a <label for> (or an
// aria-label), ids are unique, and no module creates form fields (whose labels this test could
// not see).
func TestControlsLabelled(t *testing.T) {
	files := staticFiles(t)
	page := files["index.html"]
	n := 0
	for _, m := range formField.FindAllStringSubmatch(page, -1) {
		n++
		id := idAttr.FindStringSubmatch(m[2])
		switch {
		case id == nil:
			t.Errorf("<%s%s> has no id to label it by", m[1], m[2])
		case !strings.Contains(page, `<label for="`+id[1]+`"`) && !strings.Contains(m[2], "aria-label="):
			t.Errorf("#%s has no <label for=%q>", id[1], id[1])
		}
	}
	if n < 10 {
		t.Errorf("found %d form fields in index.html, want the chat's, bench's, train's and the API key's", n)
	}
	seen := map[string]bool{}
	for _, m := range idAttr.FindAllStringSubmatch(page, -1) {
		if seen[m[1]] {
			t.Errorf("id %q appears twice in index.html", m[1])
		}
		seen[m[1]] = true
	}
	create := regexp.MustCompile(`(?:createElement|\bel)\(\s*['"](input|select|textarea)['"]`)
	for name, body := range files {
		if strings.HasSuffix(name, ".js") {
			for _, m := range create.FindAllString(body, -1) {
				t.Errorf("%s creates a form field (%s): put it in index.html with a <label>", name, m)
			}
		}
	}
}

// TestContractIDs: the ids the browser tests drive (docs/console.md) are in the page or the
// modules, and the nav links the four views.
func TestContractIDs(t *testing.T) {
	files := staticFiles(t)
	all := strings.Join([]string{files["index.html"], files["bench.js"]}, "\n")
	for _, id := range []string{
		"theme-toggle", "api-key-dialog", "api-key", "api-key-save",
		"chat-model", "chat-system", "param-temperature", "param-top-p", "param-max-tokens", "param-seed",
		"param-stop", "chat-input", "chat-send", "chat-stop", "chat-export", "chat-clear", "chat-messages",
		"cloud-replicas", "cloud-chart-tokens", "cloud-chart-kv", "cloud-autoscale", "cloud-requests",
		"bench-file", "bench-list", "bench-compare", "bench-charts",
		"train-summary", "train-chart-loss", "train-chart-lr", "train-chart-gradnorm", "train-chart-mfu",
	} {
		if !strings.Contains(all, `id="`+id+`"`) {
			t.Errorf("id %q is missing from index.html", id)
		}
	}
	for _, v := range []string{"chat", "cloud", "bench", "train"} {
		if !strings.Contains(files["index.html"], `<a href="#/`+v+`">`) {
			t.Errorf("nav has no link to #/%s", v)
		}
	}
}
