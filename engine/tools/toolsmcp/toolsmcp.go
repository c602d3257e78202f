// Package toolsmcp serves a session's tools (package tools) as an MCP
// server, on the official Go SDK (github.com/modelcontextprotocol/go-sdk):
// over stdio, or over streamable HTTP behind a bearer token. A tool's
// failure comes back as an MCP tool error (IsError) whose text says what
// went wrong, never as a protocol error or a dropped connection.
package toolsmcp

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groveworks/grove/engine/tools"
)

// NewServer returns an MCP server offering every tool of set, under the
// name and version given.
func NewServer(set *tools.Set, name, version string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: version}, nil)
	for _, t := range set.Tools() {
		tool := t
		s.AddTool(&mcp.Tool{Name: tool.Name, Description: tool.Description, InputSchema: tool.InputSchema},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var args json.RawMessage
				if req.Params != nil {
					args = req.Params.Arguments
				}
				out, err := set.Call(ctx, tool.Name, args)
				if err != nil {
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out}}}, nil
			})
	}
	return s
}

// ErrNoToken is a token too short to protect anything.
var ErrNoToken = errors.New("toolsmcp: the bearer token must be at least 16 bytes")

// HTTPHandler serves server over streamable HTTP to clients that present
// token as a bearer token (Authorization: Bearer <token>); any other
// request is refused with 401. A session ID is not a credential: the
// token is.
func HTTPHandler(server *mcp.Server, token string) (http.Handler, error) {
	if len(token) < 16 {
		return nil, ErrNoToken
	}
	verify := func(_ context.Context, got string, _ *http.Request) (*auth.TokenInfo, error) {
		if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: "grove"}, nil
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	// The token lives as long as the server: it has no expiry to check.
	return auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h), nil
}
