// train.js: the train view (being built).
export function mount() {}
export function unmount() {}
