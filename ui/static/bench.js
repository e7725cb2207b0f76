// bench.js: the bench view (being built).
export function mount() {}
export function unmount() {}
