// Checks a prepared data directory against Hugging Face's tokenizer: re-tokenizes the text with
// @huggingface/tokenizers (each blank-line-separated document as <|endoftext|> (id 0) + its
// encoding, as docs/formats/shards.md describes) and compares with the ids in the split's shards.
// Run by hand only:
//
//   node check_shards_hf.mjs <node_modules dir> <data dir> <split> <text file>
import fs from "node:fs";
import path from "node:path";

const [nodeModules, dataDir, split, textFile] = process.argv.slice(2);
const { Tokenizer } = await import(path.join(nodeModules, "@huggingface/tokenizers/dist/tokenizers.mjs"));
const meta = JSON.parse(fs.readFileSync(path.join(dataDir, "meta.json"), "utf8"));
const cfgPath = path.join(dataDir, "tokenizer_config.json");
const tok = new Tokenizer(JSON.parse(fs.readFileSync(path.join(dataDir, meta.tokenizer), "utf8")),
  fs.existsSync(cfgPath) ? JSON.parse(fs.readFileSync(cfgPath, "utf8")) : {});

const docs = fs.readFileSync(textFile, "utf8").replace(/\r\n/g, "\n").split(/\n[ \t]*\n/)
  .map((d) => d.replace(/^\n+|\n+$/g, "")).filter((d) => d.trim() !== "");
const want = [];
for (const d of docs) want.push(meta.bos_id, ...tok.encode(d, { add_special_tokens: false }).ids);

const got = [];
for (const s of meta[split]) {
  const b = fs.readFileSync(path.join(dataDir, s.file));
  if (b.toString("latin1", 0, 8) !== "LLMCTOK1") throw new Error(`${s.file}: bad magic`);
  const width = b.readUInt32LE(12);
  for (let off = 16; off < b.length; off += width) got.push(width === 2 ? b.readUInt16LE(off) : b.readUInt32LE(off));
}
let first = -1;
for (let i = 0; i < Math.max(got.length, want.length) && first < 0; i++) if (got[i] !== want[i]) first = i;
console.log(`${split}: ${docs.length} documents, Hugging Face ${want.length} tokens, shards ${got.length} tokens,`,
  first < 0 ? "identical" : `first difference at token ${first}`);
process.exit(first < 0 ? 0 : 1);
