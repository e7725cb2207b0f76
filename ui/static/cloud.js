// cloud.js: the cloud view (being built).
export function mount() {}
export function unmount() {}
