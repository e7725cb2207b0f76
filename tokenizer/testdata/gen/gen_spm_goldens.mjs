// Generates tokenizer/testdata/spm/golden_*.json with Hugging Face's tokenizers library (the
// Rust crate through its Node binding, npm package `tokenizers`) for the SentencePiece-style
// tokenizer.json files in testdata/spm, and writes the Metaspace variants of tok512.json and
// tok512-unigram.json first. Run by hand only (see ../README.md); tests read the committed
// output.
//
//   node gen_spm_goldens.mjs <node_modules dir> <shared dir> <testdata/spm dir>
import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";
import { createRequire } from "node:module";

const [nodeModules, sharedDir, spmDir] = process.argv.slice(2);
const require = createRequire(path.join(nodeModules, "x.js"));
const { Tokenizer } = require("tokenizers");
const version = JSON.parse(fs.readFileSync(path.join(nodeModules, "tokenizers/package.json"), "utf8")).version;

const texts = [
  "", " ", "  ", "   ", "\t", "\n", "x", "Hello world", " Hello world", "Hello world ", "  leading two",
  "trailing two  ", "multiple   spaces   inside", "Once upon a time, there was a little girl named Lily.",
  "line one\nline two\n\nline four\n", "a\r\nb", "\ttabbed\tcolumns\t\tdouble", " \n \n  x",
  "digits 0123456789 and 3.14159 and 1,000,000", "2024-12-01 12:34:56", "Ünïcödé façade naïve café résumé",
  "e\u0301 composed vs é", "punctuation!? (yes); \"quoted\" — dash… 'single' [brackets] {braces} <angle>",
  "日本語のテキストです。", "中文测试：你好，世界！", "한국어 텍스트", "Привет, мир!", "مرحبا بالعالم",
  "emoji 🙂👍🏽 and 👨‍👩‍👧 family", "🦙", "nbsp\u00a0here", "<s>", "text <s> after bos", "end</s> and more",
  "<unk> literal", "▁ already a meta space", "x▁y", "A", "I'm sure you're right; we'll see.",
  "def f(x):\n    return x**2  # square\n",
];
const llamacppInp = fs.readFileSync(path.join(sharedDir, "models/llamacpp-vocab/ggml-vocab-llama-spm.gguf.inp"), "utf8")
  .split("\n__ggml_vocab_test__\n").slice(0, -1);
const allTexts = texts.concat(llamacppInp);

const readJSON = (name) => JSON.parse(fs.readFileSync(path.join(spmDir, name + ".json"), "utf8"));
const writeJSON = (name, obj) => fs.writeFileSync(path.join(spmDir, name + ".json"), JSON.stringify(obj, null, 2) + "\n");

// Metaspace variants: the newer Llama/Mistral conversions (no normalizer, Metaspace with
// prepend_scheme "first", split false) and the older tokenizers default (add_prefix_space,
// i.e. "always", split true). The decoder stays ByteFallback-aware.
function metaspace(src, scheme, split) {
  const t = readJSON(src);
  t.normalizer = null;
  t.pre_tokenizer = { type: "Metaspace", replacement: "\u2581", prepend_scheme: scheme, split };
  return t;
}
writeJSON("tok512-metaspace", metaspace("tok512", "first", false));
writeJSON("tok512-metaspace-split", metaspace("tok512", "always", true));
writeJSON("tok512-unigram-metaspace", metaspace("tok512-unigram", "always", true));

const names = ["tok512", "llama2", "tok512-metaspace", "tok512-metaspace-split", "tok512-unigram", "tok512-unigram-metaspace"];
const sums = {};
for (const name of names) {
  const file = path.join(spmDir, name + ".json");
  sums[name] = crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");
  const tok = Tokenizer.fromFile(file);
  const cases = [];
  for (const text of allTexts) {
    const enc = await tok.encode(text, null, { addSpecialTokens: false });
    const ids = Array.from(enc.getIds());
    const decoded = await tok.decode(ids, true);
    cases.push({ text, ids, decoded });
  }
  fs.writeFileSync(path.join(spmDir, `golden_${name}.json`),
    JSON.stringify({ tokenizer: name, library: `tokenizers ${version} (npm)`, cases }, null, 0) + "\n");
  console.log(name, cases.length, "cases, sha256", sums[name]);
}

// Cross-check (printed only) with @huggingface/tokenizers, the JS port, when it is installed.
const jsPath = path.join(nodeModules, "@huggingface/tokenizers/dist/tokenizers.mjs");
if (fs.existsSync(jsPath)) {
  const js = await import(jsPath);
  const jsVersion = JSON.parse(fs.readFileSync(path.join(nodeModules, "@huggingface/tokenizers/package.json"), "utf8")).version;
  for (const name of names) {
    const tok = new js.Tokenizer(readJSON(name), {});
    const g = JSON.parse(fs.readFileSync(path.join(spmDir, `golden_${name}.json`), "utf8"));
    const bad = g.cases.filter((c) =>
      JSON.stringify(Array.from(tok.encode(c.text, { add_special_tokens: false }).ids)) !== JSON.stringify(c.ids));
    console.log(`@huggingface/tokenizers ${jsVersion}: ${name}: ${bad.length} of ${g.cases.length} differ`,
      bad.slice(0, 2).map((c) => JSON.stringify(c.text)).join(" "));
  }
}
