// The consoles' stylesheet, served at /console/style.css from the executable itself (no build step, no inline style).
export const STYLESHEET = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f6f7f9; }
header { display: flex; gap: 1.5rem; align-items: center; padding: .6rem 1.2rem; background: #1d2330; color: #fff; }
header a { color: #cfe0ff; margin-right: 1rem; }
header .sign-out { margin-left: auto; display: flex; gap: .6rem; align-items: center; }
main { padding: 1rem 1.2rem; max-width: 1200px; }
h1 { font-size: 1.3rem; } h2 { font-size: 1.05rem; margin-top: 1.6rem; }
table { border-collapse: collapse; background: #fff; margin: .4rem 0 1rem; }
th, td { border: 1px solid #d7dbe3; padding: .3rem .6rem; text-align: left; vertical-align: top; }
th { background: #eceff4; }
td.error-text { max-width: 28rem; overflow-wrap: anywhere; }
form.inline { display: inline; }
fieldset { background: #fff; border: 1px solid #d7dbe3; margin: .6rem 0; }
label { display: inline-block; margin: .2rem .8rem .2rem 0; }
input[type=text], input[type=password] { min-width: 14rem; }
.notice { padding: .5rem .8rem; border-radius: 4px; }
.notice.ok { background: #e3f6e8; border: 1px solid #7cc48e; }
.notice.error { background: #fde8e8; border: 1px solid #e08b8b; }
.status-ACTIVE, .status-SENT, .status-PUBLISHED, .status-DONE { color: #177a35; font-weight: 600; }
.status-REVOKED, .status-FAILED, .status-CANCELLED { color: #b42318; font-weight: 600; }
.none { color: #8a93a6; }
`;
