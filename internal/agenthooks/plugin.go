package agenthooks

import "strings"

// pluginMarker begins the OpenCode plugin grove writes: a file that
// begins otherwise is not grove's.
const pluginMarker = "// grove: agent hooks."

// plugin is grove's OpenCode plugin, running command for each event with
// a payload of grove's own shape on stdin (session_id, cwd, prompt, tool,
// paths): OpenCode's hooks are functions, not commands.
func plugin(command string) string {
	return strings.ReplaceAll(pluginSource, "@GROVE@", jsString(command))
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\u2028", `\u2028`, "\u2029", `\u2029`)
	return `"` + r.Replace(s) + `"`
}

const pluginSource = pluginMarker + ` Written by grove hooks install --agent opencode;
// grove hooks uninstall --agent opencode removes it. Each event runs
// grove hooks handle, which checkpoints the session's grove head.
import { spawnSync } from "node:child_process"

const grove = @GROVE@

function handle(event, payload) {
  const r = spawnSync(grove, ["hooks", "handle", "--agent", "opencode", "--event", event], {
    input: JSON.stringify(payload), encoding: "utf8", timeout: 60000,
  })
  if (r.stderr) process.stderr.write(r.stderr)
  try { return JSON.parse(r.stdout || "{}") } catch { return {} }
}

export const Grove = async ({ directory }) => {
  const args = new Map() // a tool call's arguments, by call ID, until it ends
  return {
    "chat.message": async (input, output) => {
      const prompt = (output.parts || []).filter((p) => p.type === "text").map((p) => p.text).join("\n")
      const out = handle("chat.message", { session_id: input.sessionID, cwd: directory, prompt })
      if (out.block) throw new Error(out.block)
    },
    "tool.execute.before": async (input, output) => {
      args.set(input.callID, output.args || {})
    },
    "tool.execute.after": async (input) => {
      const a = args.get(input.callID) || input.args || {}
      args.delete(input.callID)
      const paths = [a.filePath, a.path].filter((p) => typeof p === "string" && p !== "")
      if (paths.length > 0 && ["write", "edit", "patch"].includes(input.tool)) {
        handle("tool.execute.after", { session_id: input.sessionID, cwd: directory, tool: input.tool, paths })
      }
    },
    event: async ({ event }) => {
      if (event.type === "session.created" || event.type === "session.idle") {
        const id = event.properties.sessionID || (event.properties.info || {}).id
        if (id) handle(event.type, { session_id: id, cwd: directory })
      }
    },
  }
}
`
