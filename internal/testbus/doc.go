// Package testbus is test support: a real in-process NATS server on a random port.
package testbus
