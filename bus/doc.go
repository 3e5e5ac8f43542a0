// Package bus owns how a gpusched process reaches an external NATS
// server or cluster: the URLs and the client's credentials and TLS
// options, named as the NATS client conventions (and the nats CLI) name
// them, and the flags that set them.
package bus
