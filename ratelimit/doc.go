// Package ratelimit is the Workers Rate Limiting binding, which counts new
// orders per client against the budget set in wrangler.toml.
package ratelimit
