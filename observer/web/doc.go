// Package web owns the web dashboard: an HTTP server with its page, script
// and style embedded in the binary (no CDN, no build step), the cluster's
// state pushed live as server-sent events, and the demo's controls (switch
// strategy, add a job, show fragmentation, kill a GPU) turned into the
// cluster's public NATS requests.
package web
