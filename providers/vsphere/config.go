package vsphere

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Environment variables read by ConfigFromEnv; the names are govc's, so a
// vSphere user's existing settings work unchanged.
const (
	EnvURL        = "GOVC_URL"
	EnvUsername   = "GOVC_USERNAME"
	EnvPassword   = "GOVC_PASSWORD"
	EnvInsecure   = "GOVC_INSECURE"
	EnvCACerts    = "GOVC_TLS_CA_CERTS"
	EnvKnownHosts = "GOVC_TLS_KNOWN_HOSTS"
	EnvDatacenter = "GOVC_DATACENTER"
)

// Config says how to reach and log in to a vCenter.
type Config struct {
	// URL is the vCenter: host, host:port, or https://host/sdk. User info in
	// it is accepted, as govc does, and moved into Username and Password.
	URL      string
	Username string
	Password string
	// Insecure skips TLS verification. Only when asked; callers warn.
	Insecure bool
	// CAFile is a PEM bundle that signs the vCenter's certificate.
	CAFile string
	// KnownHostsFile holds "host thumbprint" lines (govc's format).
	KnownHostsFile string
	// Thumbprint is the SHA-1 or SHA-256 thumbprint of the certificate.
	Thumbprint string
	// Datacenter scopes VM names; needed when there are several.
	Datacenter string
	// PlainHTTP allows an http:// URL, whose login crosses the network in
	// cleartext: only for a simulator on loopback (see PlainHTTPError).
	PlainHTTP bool
}

// ConfigFromEnv reads the govc variables through getenv (os.Getenv in
// production). A malformed GOVC_INSECURE is an error, not a silent false.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		URL:            getenv(EnvURL),
		Username:       getenv(EnvUsername),
		Password:       getenv(EnvPassword),
		CAFile:         getenv(EnvCACerts),
		KnownHostsFile: getenv(EnvKnownHosts),
		Datacenter:     getenv(EnvDatacenter),
	}
	if v := getenv(EnvInsecure); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return Config{}, fmt.Errorf("%s=%q: expected true or false", EnvInsecure, v)
		}
		c.Insecure = b
	}
	return c, nil
}

// Endpoint parses and checks URL and returns the SDK endpoint without user
// info. Errors name the setting and never hold the password.
func (c Config) Endpoint() (*url.URL, error) {
	raw := strings.TrimSpace(c.URL)
	if raw == "" {
		return nil, errors.New("vCenter URL is empty: set --vcenter-url or GOVC_URL (e.g. https://vcenter.example.com/sdk)")
	}
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse quotes its input, which may hold a password.
		return nil, fmt.Errorf("vCenter URL %q is not a URL; expected https://host[:port]/sdk", redactRaw(c.URL))
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, fmt.Errorf("vCenter URL scheme %q: expected https", u.Scheme)
	case u.Hostname() == "":
		return nil, fmt.Errorf("vCenter URL %q has no host; expected https://host[:port]/sdk", redactRaw(c.URL))
	case u.Scheme == "http" && !c.PlainHTTP:
		return nil, fmt.Errorf("vCenter URL http://%s: its login would send the password in cleartext; use https:// (--vcenter-plain-http allows http for a simulator on loopback)", u.Host)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/sdk"
	}
	u.User = nil
	u.RawQuery, u.Fragment = "", ""
	return u, nil
}

// Validate checks what can be checked before dialling: the URL, and that
// a username is there. Errors never hold the password.
func (c Config) Validate() error {
	if _, err := c.Endpoint(); err != nil {
		return err
	}
	_, _, err := c.credentials()
	return err
}

// credentials returns the username and password, from the fields or else
// from the URL's user info.
func (c Config) credentials() (string, string, error) {
	user, pass := c.Username, c.Password
	raw := c.URL
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if user == "" {
			user = u.User.Username()
		}
		if p, ok := u.User.Password(); ok && pass == "" {
			pass = p
		}
	}
	if user == "" {
		return "", "", fmt.Errorf("no vCenter username: set --vcenter-username or %s, or put it in the URL", EnvUsername)
	}
	return user, pass, nil
}

// String describes the config with the password removed.
func (c Config) String() string {
	u, err := c.Endpoint()
	if err != nil {
		return "vcenter(invalid URL)"
	}
	return fmt.Sprintf("vcenter(%s, insecure=%t)", u, c.Insecure)
}

// redactRaw blanks anything between "://" and "@" in a raw URL string.
func redactRaw(raw string) string {
	at := strings.LastIndex(raw, "@")
	if at < 0 {
		return raw
	}
	start := strings.Index(raw, "://")
	if start < 0 || start > at {
		start = -3
	}
	return raw[:start+3] + "REDACTED" + raw[at:]
}

// CheckThumbprint checks a certificate thumbprint as govc takes it: the
// SHA-1 (20 bytes) or SHA-256 (32 bytes) of the certificate in hex, its
// bytes separated by colons or not.
func CheckThumbprint(tp string) error {
	h := strings.ReplaceAll(tp, ":", "")
	if _, err := hex.DecodeString(h); err != nil || (len(h) != 40 && len(h) != 64) {
		return fmt.Errorf("%q is not a thumbprint: expected the SHA-1 (40 hex digits) or SHA-256 (64) of the certificate, bytes separated by colons or not", tp)
	}
	return nil
}

// Loopback tells whether u's host is this machine's loopback: 127.0.0.0/8,
// ::1 or localhost.
func Loopback(u *url.URL) bool {
	h := u.Hostname()
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
