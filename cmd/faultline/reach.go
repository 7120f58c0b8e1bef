package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/providers/capi"
)

// newReachCommand is what vcenter.unreachable's probe pod runs (hidden):
// it dials each address and says which it reached, on stdout and in the
// pod's termination message.
func newReachCommand() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:    "reach HOST:PORT...",
		Short:  "Dial each address over TCP; exit 0 if every one answered, 5 if none did, 6 if some did",
		Args:   cobra.MinimumNArgs(1),
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, a := range args {
				if _, _, err := net.SplitHostPort(a); err != nil {
					return usageErr("%q: expected HOST:PORT: %v", a, err)
				}
			}
			var lines []string
			reached := 0
			for _, a := range args {
				ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
				conn, err := new(net.Dialer).DialContext(ctx, "tcp", a)
				cancel()
				if err != nil {
					lines = append(lines, fmt.Sprintf("unreachable %s: %v", a, err))
					continue
				}
				reached++
				lines = append(lines, fmt.Sprintf("reached %s (%s)", a, conn.RemoteAddr()))
				_ = conn.Close()
			}
			report := strings.Join(lines, "\n") + "\n"
			fmt.Fprint(cmd.OutOrStdout(), report)
			// A pod's termination message, when there is one.
			if f, err := os.OpenFile("/dev/termination-log", os.O_WRONLY|os.O_TRUNC, 0); err == nil {
				_, _ = f.WriteString(report)
				_ = f.Close()
			}
			switch reached {
			case len(args):
				return nil
			case 0:
				return exitCode(capi.ReachedNone)
			}
			return exitCode(capi.ReachedSome)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for each address to answer")
	return cmd
}
