package readmecheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// RepoURL is the address under which a doc may link this repository's
// files absolutely (as doc.go must, for pkg.go.dev): such a link is
// checked as a link to the file in the checkout.
const RepoURL = "https://github.com/stak/inbox/"

var (
	// mdLink matches an inline Markdown link or image: [text](target) or
	// [text](target "title").
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// mdRefDef matches a link reference definition: [name]: target.
	mdRefDef = regexp.MustCompile(`(?m)^\s{0,3}\[[^\]]+\]:\s*(\S+)`)
	// repoLink matches an absolute link to a file of this repository.
	repoLink = regexp.MustCompile(regexp.QuoteMeta(RepoURL) + `(?:blob|tree)/[^/\s]+/[^\s)>\]"'` + "`" + `]*`)
	// htmlAnchor matches an HTML anchor a heading may carry.
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	// codeSpan matches an inline code span.
	codeSpan = regexp.MustCompile("`[^`\n]*`")
)

// BrokenLinks returns one line for each link of the files (Markdown, or
// Go source for its absolute links to this repository) to a file or a
// heading that does not exist. root is the repository's checkout: links
// are relative to their file, and absolute ones (RepoURL) to root. Links
// to other sites are not checked; neither are links in code.
func BrokenLinks(root string, files []string) ([]string, error) {
	var broken []string
	anchors := map[string]map[string]bool{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, l := range links(f, string(raw)) {
			target, anchor, _ := strings.Cut(l.target, "#")
			var path string
			switch {
			case strings.HasPrefix(target, RepoURL):
				rest := repoLink.FindString(target)
				if rest != target {
					broken = append(broken, fmt.Sprintf("%s:%d: %s: not a link to a file of a branch", f, l.line, l.target))
					continue
				}
				// blob/<branch>/<path>
				parts := strings.SplitN(strings.TrimPrefix(target, RepoURL), "/", 3)
				path = filepath.Join(root, filepath.FromSlash(parts[2]))
			case strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:"):
				continue
			case target == "":
				path = f
			default:
				path = filepath.Join(filepath.Dir(f), filepath.FromSlash(target))
			}
			if _, err := os.Stat(path); err != nil {
				broken = append(broken, fmt.Sprintf("%s:%d: %s: no such file", f, l.line, l.target))
				continue
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(path, ".md") {
				broken = append(broken, fmt.Sprintf("%s:%d: %s: an anchor in a file that is not Markdown", f, l.line, l.target))
				continue
			}
			if anchors[path] == nil {
				raw, err := os.ReadFile(path)
				if err != nil {
					return nil, err
				}
				anchors[path] = Anchors(string(raw))
			}
			if !anchors[path][anchor] {
				broken = append(broken, fmt.Sprintf("%s:%d: %s: no such heading", f, l.line, l.target))
			}
		}
	}
	return broken, nil
}

// link is a link of a doc, at its line.
type link struct {
	line   int
	target string
}

// links returns the links of file, whose text is src: in a Markdown file
// its inline links, images and reference definitions outside code, in any
// other its absolute links to this repository.
func links(file, src string) []link {
	var out []link
	if !strings.HasSuffix(file, ".md") {
		for n, line := range strings.Split(src, "\n") {
			for _, m := range repoLink.FindAllString(line, -1) {
				out = append(out, link{n + 1, strings.TrimRight(m, ".,;:")})
			}
		}
		return out
	}
	inCode := false
	for n, line := range strings.Split(src, "\n") {
		if strings.HasPrefix(strings.TrimLeft(line, " "), "```") {
			inCode = !inCode
			continue
		}
		if inCode {
			continue
		}
		line = codeSpan.ReplaceAllString(line, "")
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			out = append(out, link{n + 1, m[1]})
		}
		for _, m := range mdRefDef.FindAllStringSubmatch(line, -1) {
			out = append(out, link{n + 1, m[1]})
		}
	}
	return out
}

// Anchors returns the anchors of the headings of the Markdown text src,
// as GitHub makes them (lower case, punctuation dropped, spaces to
// hyphens, a repeated one numbered -1, -2, ...), and of its HTML anchors.
func Anchors(src string) map[string]bool {
	out := map[string]bool{}
	inCode := false
	for _, line := range strings.Split(src, "\n") {
		if strings.HasPrefix(strings.TrimLeft(line, " "), "```") {
			inCode = !inCode
			continue
		}
		if inCode {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		text, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if !ok || !strings.HasPrefix(line, "#") || len(line)-len(strings.TrimLeft(line, "#")) > 6 {
			continue
		}
		slug := Slug(text)
		for i := 1; out[slug]; i++ {
			slug = fmt.Sprintf("%s-%d", Slug(text), i)
		}
		out[slug] = true
	}
	return out
}

// mdLinkText matches a link in a heading, to keep its text.
var mdLinkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// Slug returns the anchor GitHub gives a heading of text text.
func Slug(text string) string {
	text = mdLinkText.ReplaceAllString(strings.TrimSpace(text), "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}
