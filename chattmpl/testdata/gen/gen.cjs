// gen.cjs renders every template in ../templates/templates.json over every case in ../cases.json
// with the reference renderer @huggingface/jinja and writes ../golden/<template>/<case>.txt (the
// rendered text) or <case>.err (the error message). Run by hand only, from a scratch directory
// that has the reference installed:
//
//   mkdir -p /tmp/jj && cd /tmp/jj && npm install @huggingface/jinja@0.5.11
//   TZ=UTC node /path/to/chattmpl/testdata/gen/gen.cjs
//
// It also renders ../snippets.json (one feature each) into ../golden/snippets.json.
// The clock is frozen at FIXED_TIME (also used by the Go test) so strftime_now is reproducible.
// Variables are passed the way transformers.js apply_chat_template passes them: messages,
// add_generation_prompt, tools (left undefined when the case has none), bos_token/eos_token
// (left undefined when empty), then the case's extra variables.
"use strict";
const fs = require("fs");
const path = require("path");
const { createRequire } = require("module");

const FIXED_TIME = Date.UTC(2025, 2, 9, 14, 30, 0); // 2025-03-09T14:30:00Z, see golden_test.go
const RealDate = Date;
globalThis.Date = class extends RealDate {
	constructor(...args) {
		if (args.length === 0) super(FIXED_TIME);
		else super(...args);
	}
	static now() {
		return FIXED_TIME;
	}
};

const requireFromCwd = createRequire(path.join(process.cwd(), "noop.js"));
const { Template } = requireFromCwd("@huggingface/jinja");
const version = JSON.parse(fs.readFileSync(path.join(process.cwd(), "node_modules", "@huggingface", "jinja", "package.json"), "utf8")).version;

const root = path.join(__dirname, "..");
const templates = JSON.parse(fs.readFileSync(path.join(root, "templates", "templates.json"), "utf8"));
const cases = JSON.parse(fs.readFileSync(path.join(root, "cases.json"), "utf8"));

const goldenDir = path.join(root, "golden");
fs.rmSync(goldenDir, { recursive: true, force: true });
let ok = 0, errs = 0;
for (const t of templates) {
	const src = fs.readFileSync(path.join(root, "templates", t.file), "utf8");
	const dir = path.join(goldenDir, t.name);
	fs.mkdirSync(dir, { recursive: true });
	for (const c of cases) {
		const vars = { messages: c.messages, add_generation_prompt: !!c.add_generation_prompt };
		if (c.tools !== undefined) vars.tools = c.tools;
		if (t.bos) vars.bos_token = t.bos;
		if (t.eos) vars.eos_token = t.eos;
		Object.assign(vars, c.extra || {});
		try {
			const out = new Template(src).render(vars);
			fs.writeFileSync(path.join(dir, c.name + ".txt"), out);
			ok++;
		} catch (e) {
			fs.writeFileSync(path.join(dir, c.name + ".err"), String(e && e.message));
			errs++;
		}
	}
}
// Snippets: small templates exercising one feature each, with their own variables.
const snippets = JSON.parse(fs.readFileSync(path.join(root, "snippets.json"), "utf8"));
const snippetOut = {};
for (const sn of snippets) {
	try {
		snippetOut[sn.name] = { out: new Template(sn.src).render(sn.vars || {}) };
		ok++;
	} catch (e) {
		snippetOut[sn.name] = { err: String(e && e.message) };
		errs++;
	}
}
fs.writeFileSync(path.join(goldenDir, "snippets.json"), JSON.stringify(snippetOut, null, 1) + "\n");
fs.writeFileSync(path.join(goldenDir, "VERSION"), `@huggingface/jinja ${version}\n`);
console.log(`rendered ${ok}, errors ${errs}`);
