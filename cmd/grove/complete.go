package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// completions sets what the shell completes for each command's positional
// arguments: head names where a command takes one first, session IDs where
// it takes one, nothing for the rest (so that the shell does not offer file
// names where none fit).
func (a *app) completions(root *cobra.Command) {
	heads := map[string]bool{
		"checkpoint": true, "log": true, "restore": true, "fork": true, "status": true, "diff": true,
		"archive": true, "unarchive": true, "destroy": true, "path": true, "session start": true, "run": true,
		"sparse": true, "ps": true, "env": true,
	}
	sessions := map[string]bool{"session resume": true, "session events": true, "session close": true}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		op := ""
		if c.HasParent() {
			op = c.CommandPath()[len(c.Root().Name())+1:]
		}
		switch {
		case heads[op]:
			c.ValidArgsFunction = a.completeHeads
		case sessions[op]:
			c.ValidArgsFunction = a.completeSessions
		case op == "materialize":
			c.ValidArgsFunction = func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
				if len(args) == 1 {
					return nil, cobra.ShellCompDirectiveFilterDirs
				}
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
		case c.ValidArgsFunction == nil && c.ValidArgs == nil && op != "":
			c.ValidArgsFunction = cobra.NoFileCompletions
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// completeHeads offers the repository's head names for a command's first
// argument.
func (a *app) completeHeads(_ *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ws, err := a.workspace()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	heads, err := ws.Heads(a.ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var out []string
	for _, hi := range heads {
		if strings.HasPrefix(hi.Name, prefix) {
			out = append(out, hi.Name+"\t"+string(hi.Access)+" head on "+hi.Branch)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeSessions offers the IDs of the sessions in $GROVE_HOME.
func (a *app) completeSessions(_ *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	eng, err := a.engine()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	all, err := eng.Sessions(a.ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var out []string
	for _, si := range all {
		if strings.HasPrefix(si.ID, prefix) {
			out = append(out, si.ID+"\t"+sessionState(si)+" session on "+si.Head)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
