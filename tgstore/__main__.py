from tgstore.cli import app

app(prog_name="tgstore")
