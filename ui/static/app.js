// The console: replaced by the views (docs/console.md).
